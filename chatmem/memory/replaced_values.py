"""Which pinned values a later message replaced, so the drift guard does not send a value
the user corrected as if it were current.

Two signals, both about the pinned text itself, never a guess from the topic alone:
- the message says the change: "moved from Leeds to Shenzhen", "instead of Biscuit",
  "17 March, not 14 March", "no longer at St James's", 从利兹搬到深圳, 是三月十七日，不是三月十四日;
- the message restates the clause the value was said in, with another value after the
  same first-person opening (my/our X is, I/we live in, 我的X是, 我家的狗叫): "My
  birthday is 14 March" then "my birthday is 17 March"; "My job is staff nurse at St
  James's Hospital" then "My job is data analyst at DJI now".
A replaced pin is kept, marked with the turn that replaced it: what the user had before
is still a detail ("what did I do before DJI?"). A cue alone is no change: "on holiday
from 14 March to 20 March" is a range, "flying from Leeds to Paris" a trip, 从2020年开始
a start, "not Alice Chen's fault" no correction; a current value sent marked replaced
misleads the model more than a replaced one sent bare, so a cue counts only in a change
("moved", "changed", 搬到, 改成) or a correction ("X, not Y", "not X but Y", 不是X，是Y).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from chatmem.lazy_patterns import lazy
from chatmem.memory.anchors import extract_anchors, present
from chatmem.memory.pins import Pin

_CLAUSE = lazy(r"[^.!?;:。！？；：\n]+")
# A first-person frame, the value after it: "my birthday is", "I live in", 我的生日是.
_FRAME_EN = lazy(r"(?<![\w'])(?:(?:my|our)\s+\w+(?:\s+\w+)?\s+(?:is|are|was)"
                       r"|(?:i|we)(?:'m|\s+am|\s+are)?\s+(?:live|living|work|working|based)"
                       r"\s+(?:in|at|for))\b", re.IGNORECASE)
_FRAME_ZH = lazy(r"(?:我的|我们的|我家的|我家)[\u4e00-\u9fff]{1,3}?(?:是|叫)"
                       r"|我(?:们)?(?:住在|叫)")
_REPLACED_BEFORE = ("instead of ", "rather than ", "no longer ", "no longer at ", "no longer in ",
                    "不再是")
# "from X to Y" is a change only after a verb that changes something, in the same stretch
# of the clause: "I moved from Leeds to", "we changed the dog's name from Biscuit to".
_CHANGE_VERB = lazy(
    r"\b(?:mov(?:e|ed|es|ing)|relocat\w*|chang\w*|switch\w*|swapp?\w*|renam\w*"
    r"|reschedul\w*|postpon\w*|push(?:ed|ing)?|put back|brought forward|shift(?:ed|ing)|upgrad\w*"
    r"|downgrad\w*|updat\w*|(?:went|gone|go(?:es|ing)?) (?:up|down)|rose|risen|increas\w*"
    r"|rais\w*|dropp\w*|fell|fallen|reduc\w*|lower\w*|promot\w*)\b")
# A trip is no move: "flying from Leeds to Paris", "the train from Leeds to York" have no
# change verb. With one, what was changed may be a trip ("my flight was rescheduled from
# 14 March to", "they moved my flight from"), but travelling said after it is what goes
# from X to Y: "I changed my plans and I'm flying from Leeds to Paris". Only the verb
# forms, so "they moved the walk from Monday to" is still a change.
_TRAVELLING = lazy(
    r"\b(?:fl(?:y|ying|ies|ew|own)|driv(?:ing|en)|drove|commut(?:ing|ed)|travell?(?:ing|ed)"
    r"|rid(?:ing|den)|rode|walk(?:ing|ed)|cycl(?:ing|ed)|sail(?:ing|ed)|head(?:ing|ed))\b")
_WINDOW_WORDS = 6
# 从X搬到Y, 从X改成Y, 从X换成Y, 从X调到Y: 从 alone is where something starts (从2020年开始).
_ZH_CHANGE = lazy(r"[^，。！？；：,\n]{0,4}?(?:搬|换(?!乘)|改|变|调)"
                        r"[^，。！？；：,\n]{0,2}?(?:到|成|为|去)")
# A denied value is a replaced one only where the sentence is a correction: the value
# ends a clause or a phrase ("X, not Leeds.", "not Leeds, York", "not Leeds but York").
_NOT_BEFORE = lazy(r"(?<![a-z])(?:not|isn['’]t|wasn['’]t) $")
_CORRECTION_EN = lazy(r"\s*(?:$|[,;.!—–]|- |but\b)")
_CORRECTION_ZH = lazy(r"\s*(?:$|[，,；;。！!、—]|而是|是|了)")
_CLAUSE_END = ".!?;:。！？；：\n"


def _frame(clause: str) -> tuple[str, str]:
    """The clause's first-person frame (spacing and case aside) and what follows it."""
    found = _FRAME_EN.search(clause) or _FRAME_ZH.search(clause)
    if found is None:
        return "", ""
    return " ".join(found.group().split()).casefold(), clause[found.end():]


def _clauses(text: str) -> list[str]:
    return [c for c in _CLAUSE.findall(text) if c.strip()]


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _says_change(value: str, text: str) -> bool:
    """Whether `text` names `value` as what was before ("moved from Leeds to", "17 March,
    not 14 March", 从利兹搬到)."""
    return _says_change_folded(_folded(value), _folded(text))


def _says_change_folded(needle: str, folded: str) -> bool:
    """`_says_change` of texts already `_folded`."""
    start = looked = 0
    at = folded.find(needle)
    while at >= 0:
        # The clause's start, followed forward: each stretch is looked through once.
        # Looking back to the text's start for each repeat of the value made a long
        # clause cost its square ('ORD-1 ' * 13,000, 80 KB: 7 s).
        end = max(folded.rfind(c, looked, at) for c in _CLAUSE_END)
        start, looked = (end + 1 if end >= 0 else start), at
        if _cue_before(folded, start, at, at + len(needle)):
            return True
        at = folded.find(needle, at + 1)
    return False


_TAIL = 256
"""How far before a value its cue is read: a cue is a few words ("no longer at", a change
verb in the six words before "from"), never the whole clause."""


def _cue_before(folded: str, start: int, at: int, after: int) -> bool:
    """Whether the value at folded[at:after], in a clause from `start`, is named as replaced.

    Read in place: slicing the clause before it and the text after it, for every
    repeat of the value, cost the text's length each time."""
    if folded.endswith(_REPLACED_BEFORE, start, at):
        return True
    if folded.endswith("from ", start, at) and folded.startswith(
            "to ", after + folded.startswith(" ", after)):
        # Only the stretch since the last comma: "I changed my holiday, it's from 14 March".
        tail = max(start, at - _TAIL)
        stretch = folded[tail:at - len("from ")]
        if tail > start and folded[tail - 1] != " ":
            stretch = stretch.partition(" ")[2]  # a word cut by the tail is no word
        words = stretch.rsplit(",", 1)[-1].split()[-_WINDOW_WORDS:]
        window = " ".join(words)
        changes = list(_CHANGE_VERB.finditer(window))
        return bool(changes) and not _TRAVELLING.search(window, changes[-1].end())
    # _NOT_BEFORE's longest cue is 7 characters; what is before `start` is another clause.
    if _NOT_BEFORE.search(folded, max(start, at - 8), at):
        return bool(_CORRECTION_EN.match(folded, after))
    if folded.endswith("从", start, at):
        return bool(_ZH_CHANGE.match(folded, after))
    # 是不是杭州 asks, 要不是 is "if not for": neither denies the value.
    if folded.endswith(("不是", "不在"), start, at) and not folded.endswith(
            ("是不是", "要不是"), start, at):
        return bool(_CORRECTION_ZH.match(folded, after))
    return False


class _Said:
    """A message of `said`, folded and read for frames once however many pins ask."""

    def __init__(self, turn: int | None, text: str) -> None:
        self.turn, self.text = turn, text
        self.folded = _folded(text)
        self._framed: list[tuple[str, str, str]] | None = None
        self._holds_values: dict[int, bool] = {}

    @property
    def framed(self) -> list[tuple[str, str, str]]:
        """(frame, clause, what follows the frame) of each clause that opens with one."""
        if self._framed is None:
            self._framed = [(frame, clause, rest) for clause in _clauses(self.text)
                            for frame, rest in [_frame(clause)] if frame]
        return self._framed

    def holds_values(self, at: int) -> bool:
        """Whether what follows the frame of framed clause `at` holds an anchor."""
        if at not in self._holds_values:
            self._holds_values[at] = bool(extract_anchors(self.framed[at][2]))
        return self._holds_values[at]


def _restates(value: str, frames: Iterable[str], said: _Said) -> bool:
    """Whether a clause of `said` opens like the value's own and holds another value."""
    wanted = set(frames)
    return any(frame in wanted and not present(value, clause) and said.holds_values(at)
               for at, (frame, clause, _) in enumerate(said.framed))


def _replaced_in(pin: Pin, said: Sequence[_Said]) -> int | None:
    if pin.quote and _says_change(pin.text, pin.quote):
        return pin.turn  # "I moved from Leeds to Shenzhen" pins Leeds as what was before
    frames = [frame for clause in _clauses(pin.quote)
              for frame, rest in [_frame(clause)] if frame and present(pin.text, rest)]
    needle = _folded(pin.text)
    for message in said:
        turn = message.turn
        if pin.turn is not None and (turn is None or turn < pin.turn):
            continue
        if _says_change_folded(needle, message.folded):
            return turn
        if frames and turn != pin.turn and _restates(pin.text, frames, message):
            return turn
    return None


def mark_replaced(pinned: Sequence[Pin], said: Sequence[tuple[int | None, str]]) -> list[Pin]:
    """`pinned`, each one a message of `said` replaced marked with that message's turn."""
    read = [_Said(turn, text) for turn, text in said]
    out = []
    for pin in pinned:
        turn = None if pin.replaced is not None else _replaced_in(pin, read)
        out.append(replace(pin, replaced=turn) if turn is not None else pin)
    return out
