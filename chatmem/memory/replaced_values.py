"""Which pinned values a later message replaced, so the drift guard does not send a value
the user corrected as if it were current.

Two signals, both about the pinned text itself, never a guess from the topic alone:
- the message says the change: "from Leeds to Shenzhen", "instead of Biscuit", "not
  Leeds", "no longer at St James's", 从利兹搬到深圳, 不是三月十四日;
- the message restates the clause the value was said in, with another value after the
  same first-person opening (my/our X is, I/we live in, 我的X是, 我家的狗叫): "My
  birthday is 14 March" then "my birthday is 17 March"; "My job is staff nurse at St
  James's Hospital" then "My job is data analyst at DJI now".
A replaced pin is kept, marked with the turn that replaced it: what the user had before
is still a detail ("what did I do before DJI?"), and a misread replacement costs a few
words, not the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from chatmem.memory.anchors import extract_anchors, present
from chatmem.memory.pins import Pin

_CLAUSE = re.compile(r"[^.!?;:。！？；：\n]+")
# A first-person frame, the value after it: "my birthday is", "I live in", 我的生日是.
_FRAME_EN = re.compile(r"(?<![\w'])(?:(?:my|our)\s+\w+(?:\s+\w+)?\s+(?:is|are|was)"
                       r"|(?:i|we)(?:'m|\s+am|\s+are)?\s+(?:live|living|work|working|based)"
                       r"\s+(?:in|at|for))\b", re.IGNORECASE)
_FRAME_ZH = re.compile(r"(?:我的|我们的|我家的|我家)[\u4e00-\u9fff]{1,3}?(?:是|叫)"
                       r"|我(?:们)?(?:住在|叫)")
_CHANGE_BEFORE = ("from ", "instead of ", "rather than ", "not ", "no longer ",
                  "no longer at ", "no longer in ", "从", "不是", "不再是", "不在")


def _frame(clause: str) -> tuple[str, str]:
    """The clause's first-person frame (spacing and case aside) and what follows it."""
    found = _FRAME_EN.search(clause) or _FRAME_ZH.search(clause)
    if found is None:
        return "", ""
    return " ".join(found.group().split()).casefold(), clause[found.end():]


def _clauses(text: str) -> list[str]:
    return [c for c in _CLAUSE.findall(text) if c.strip()]


def _says_change(value: str, text: str) -> bool:
    """Whether `text` names `value` as what was before ("from Leeds to", "not 14 March")."""
    folded, needle = " ".join(text.split()).casefold(), " ".join(value.split()).casefold()
    at = folded.find(needle)
    while at >= 0:
        before = folded[max(0, at - 16):at]
        if any(before.endswith(cue) for cue in _CHANGE_BEFORE):
            after = folded[at + len(needle):at + len(needle) + 6]
            # "from Leeds" alone is where one comes from; "from Leeds to" is a move.
            if not before.endswith("from ") or after.lstrip().startswith("to "):
                return True
        at = folded.find(needle, at + 1)
    return False


def _restates(value: str, frames: Iterable[str], text: str) -> bool:
    """Whether a clause of `text` opens like the value's own and holds another value."""
    wanted = set(frames)
    for clause in _clauses(text):
        frame, rest = _frame(clause)
        if frame in wanted and not present(value, clause) and extract_anchors(rest):
            return True
    return False


def replaced_by(pin: Pin, said: Sequence[tuple[int | None, str]]) -> int | None:
    """The turn of the first message in `said` ((turn, text), oldest first) that replaced
    the pinned value, or None."""
    if pin.quote and _says_change(pin.text, pin.quote):
        return pin.turn  # "I moved from Leeds to Shenzhen" pins Leeds as what was before
    frames = [frame for clause in _clauses(pin.quote)
              for frame, rest in [_frame(clause)] if frame and present(pin.text, rest)]
    for turn, text in said:
        if pin.turn is not None and (turn is None or turn < pin.turn):
            continue
        if _says_change(pin.text, text):
            return turn
        if frames and turn != pin.turn and _restates(pin.text, frames, text):
            return turn
    return None


def mark_replaced(pinned: Sequence[Pin], said: Sequence[tuple[int | None, str]]) -> list[Pin]:
    """`pinned`, each one a message of `said` replaced marked with that message's turn."""
    out = []
    for pin in pinned:
        turn = None if pin.replaced is not None else replaced_by(pin, said)
        out.append(replace(pin, replaced=turn) if turn is not None else pin)
    return out
