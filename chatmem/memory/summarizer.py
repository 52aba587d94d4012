"""The summarizer: existing summary + new lines → new summary, in one model call.

The prompt is incremental (LangChain's summary memory re-reads only the new
lines too), asks for numbers, ids, dates, names and URLs verbatim and for the
conversation's own language, and can be replaced in the config as long as it
keeps both placeholders. A reply longer than `max_tokens` loses its oldest
part behind a visible marker, never silently and never its newest lines.
Word diffs between versions live here too, so a strategy can report a
diff's size without depending on the renderer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem.config.schema import LINES_SLOT, SUMMARY_SLOT
from chatmem.errors import ProviderResponseError
from chatmem.fts import CJK, UNSPACED_SCRIPTS
from chatmem.graphemes import grapheme_start
from chatmem.lazy_patterns import lazy
from chatmem.memory.context import Message
from chatmem.privacy import sensitive
from chatmem.providers.base import Purpose
from chatmem.reasoning import without_reasoning
from chatmem.text_caches import text_cache
from chatmem.tokens import TokenCounter

if TYPE_CHECKING:
    from chatmem.providers.base import Provider
    from chatmem.store import SummaryRecord

NO_SUMMARY = "(no summary yet)"

DEFAULT_PROMPT = f"""You keep a running summary of a conversation between a user and an assistant.
Rewrite the current summary so that it also covers the new lines, in at most a few sentences.
Keep every number, amount, id, date, name, email address and URL exactly as written,
except sensitive details: never write passwords, PINs, API keys or other secrets, card or bank
account numbers, IBANs, national id or passport numbers, or phone numbers (they may appear as
markers like ⟦card number⟧: leave those out too).
Write the summary in the language the conversation is in. Reply with the summary only.

Current summary:
{SUMMARY_SLOT}

New lines:
{LINES_SLOT}
"""


def format_lines(messages: Sequence[Message],
                 mask: Callable[[str], str] = sensitive.redact) -> str:
    """One `role: text` line per message; inner newlines folded so lines stay lines,
    except in a fenced code block, whose lines follow, indented, as written.

    Sensitive details become markers (`mask`): a summary is memory, and memory keeps
    them only when the user says so (/remember), whatever the prompt in the config asks.
    """
    return "\n".join(f"{m.role}: {_message_lines(mask(m.content))}" for m in messages)


_FENCE = lazy(r"[ \t]*(?:```|~~~)")
CODE_INDENT = "  "
"""Before each line of a message after its first: no line of a message can read as a
message of its own ("user: ...") or a point of the summary ("- ...")."""


def _message_lines(text: str) -> str:
    # Python's indentation and YAML's nesting are the code: folded into one line, a
    # summary can no longer quote them.
    lines: list[str] = []
    prose: list[str] = []
    fenced = False
    for line in text.splitlines():
        if fenced or _FENCE.match(line):
            if prose:
                lines.append(" ".join(prose))
                prose = []
            lines.append(line.rstrip())
            if _FENCE.match(line):
                fenced = not fenced
        else:
            prose.extend(line.split())
    if prose:
        lines.append(" ".join(prose))
    return f"\n{CODE_INDENT}".join(lines)


def summary_request(
    prompt: str, previous: str, messages: Sequence[Message],
    mask: Callable[[str], str] = sensitive.redact,
) -> list[dict[str, str]]:
    # str.replace, not str.format: a user's prompt may contain other braces.
    text = prompt.replace(SUMMARY_SLOT, previous or NO_SUMMARY)
    text = text.replace(LINES_SLOT, format_lines(messages, mask))
    return [{"role": "user", "content": text}]


SHORT_MARKER = "[…]\n"
"""The marker when the full one would not leave room for any text."""
_LEADING_MARKER = lazy(r"^\[…[^\]\n]*\]\n…?")
# The end-of-line form older versions wrote, whole or itself cut by a later clip
# ("[…clip […clipped to 66 tokens]"): removed so no marker is ever clipped again.
_TRAILING_MARKER = lazy(r"[ \t]*\[…[^\]\n]*\]?$", re.MULTILINE)
_JOINERS = frozenset("_-./@#,:'’")
"""What holds the pieces of an id, an amount or a time together (ORD-7731, 50,000, 15:45)."""
# Han, Kana and the scripts that write no spaces between words (Thai, Lao, Myanmar, Khmer):
# any character boundary may start a line there. Hangul spaces its words: 서울 is one.
_UNSPACED = lazy(f"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
                       f"\U00020000-\U0002fa1f{UNSPACED_SCRIPTS}]")


def clip_marker(max_tokens: int) -> str:
    return f"[…older part clipped to fit {max_tokens} tokens]\n"


def strip_clip_marker(text: str) -> str:
    """`text` without the markers of earlier clips."""
    return _TRAILING_MARKER.sub("", _LEADING_MARKER.sub("", text.strip())).strip()


def clip(text: str, max_tokens: int, counter: TokenCounter) -> tuple[str, bool]:
    """`text`, or its newest part that fits `max_tokens` behind a marker saying it was cut.

    A summary grows at its end, so the oldest part is cut: whole lines first,
    then the start of the last line if it alone is too long ("…" shows where).
    The marker counts inside the limit, and a marker left by an earlier clip
    is removed first, so markers never nest.
    """
    text = strip_clip_marker(text)
    if counter.count_text(text) <= max_tokens:
        return text, False
    for marker in (clip_marker(max_tokens), SHORT_MARKER):
        kept = _newest_part(text, marker, max_tokens, counter)
        if kept is not None:
            return marker + kept, True
    return "", True


def _newest_part(text: str, marker: str, max_tokens: int, counter: TokenCounter) -> str | None:
    """The longest tail of `text` that fits after `marker`: whole lines, else part of the last."""

    def fits(kept: str) -> bool:
        return counter.count_text(marker + kept) <= max_tokens

    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    for start in starts[1:]:
        if text[start:].strip() and fits(text[start:]):
            return text[start:]
    last = text[starts[-1]:]
    low, high = 0, len(last)
    while low < high:  # the earliest cut whose tail fits (token counts shrink with the tail)
        mid = (low + high) // 2
        if fits("…" + last[mid:].lstrip()):
            high = mid
        else:
            low = mid + 1
    low = _cut_start(last, low)
    while low < len(last) and not fits("…" + last[low:].lstrip()):
        low = _cut_start(last, low + 1)
    tail = last[low:].lstrip()
    return "…" + tail if tail else None


def _in_word(char: str) -> bool:
    return ((char.isalnum() or char in _JOINERS or unicodedata.category(char)[0] == "M")
            and not _UNSPACED.match(char))


def _cut_start(line: str, at: int) -> int:
    """The first place from `at` on where a clipped line may start: never inside a word or
    id of a script that spaces its words (a cut "D-7731" reads as a different id, "울 강남구"
    lost the 서 of 서울), nor inside a character a reader sees (half of 🇰🇷 and the next
    flag's first half read as another country; an accent alone lands on the …). A line of
    one word too long to keep is cut where a character starts."""
    start = at
    while 0 < at < len(line) and (
            not grapheme_start(line, at) or (_in_word(line[at - 1]) and _in_word(line[at]))):
        at += 1
    if line[at:].strip():
        return at
    while 0 < start < len(line) and not grapheme_start(line, start):
        start += 1
    return start


ECHO_CHARS = 20
"""Shortest line of the prompt whose repetition marks an echo: its sentences, not its
headings ("New lines:"), which a summary may well open with."""


def echoes_prompt(prompt: str, reply: str) -> bool:
    """Whether `reply` repeats a line of the prompt's own instructions (spacing and case
    aside). Small models answer with the prompt itself: stored, the summary was the
    instructions and a transcript of the lines, sent every turn and grown by each echo."""
    own = prompt.replace(SUMMARY_SLOT, "\n").replace(LINES_SLOT, "\n")
    sentences = {_line(line) for line in own.splitlines() if len(_line(line)) >= ECHO_CHARS}
    return any(_line(line) in sentences for line in reply.splitlines())


def _line(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class Draft:
    text: str
    clipped: bool
    model: str | None


def summarize(
    model: Provider,
    counter: TokenCounter,
    previous: str,
    messages: Sequence[Message],
    *,
    prompt: str = DEFAULT_PROMPT,
    max_tokens: int | None = None,
    mask: Callable[[str], str] = sensitive.redact,
) -> Draft:
    """Fold `messages` into `previous` with exactly one call to `model`.

    `mask` replaces what must not be sent or kept, in the lines and in the reply (a
    caller that follows secrets across turns passes its guard's). Raises the provider's error, or
    ProviderResponseError for an empty reply: an empty summary would silently
    erase everything summarized so far.
    """
    # The model sees the summary without an earlier clip's marker, so it cannot copy it on.
    previous = strip_clip_marker(previous)
    reply = model.complete(summary_request(prompt, previous, messages, mask),
                           purpose=Purpose.SUMMARY)
    # A model may still write one (from the old summary, or one the markers missed). A
    # reasoning model's thinking is no summary: kept, it was memory sent every turn.
    text = mask(sensitive.redact(without_reasoning(reply or ""))).strip()
    if not text:
        raise ProviderResponseError("the summarizer returned an empty summary" + (
            " (nothing but its reasoning)" if (reply or "").strip() else ""))
    if echoes_prompt(prompt, text):
        raise ProviderResponseError("the summarizer repeated its instructions instead of"
                                    " summarizing")
    clipped = False
    if max_tokens is not None:
        text, clipped = clip(text, max_tokens, counter)
    label = f"{model.name}:{model.model}" if model.name and model.model else (
        model.model or model.name or None)
    return Draft(text, clipped, label)


# -- word diffs ---------------------------------------------------------------

# CJK text has no spaces: each character is a "word", so one changed amount in a
# Chinese line shows as a few characters, not the whole line. Latin words keep
# inner joiners, so ORD-7731, 2026-05-01 and a@b.com change as one word.
_WORD = rf"[^\W{CJK}]+"
_DIFF_TOKEN = lazy(rf"[{CJK}]|{_WORD}(?:[-./@]{_WORD})*|\s+|[^\w\s]")


def diff_tokens(text: str) -> list[str]:
    return _DIFF_TOKEN.findall(text)


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """(op, text) runs: "=" kept, "-" removed, "+" added; concatenating = and + gives `new`."""
    return list(_word_diff(old, new))


@text_cache(maxsize=4)
def _word_diff(old: str, new: str) -> tuple[tuple[str, str], ...]:
    # Kept for the next call: a fold, and `summary show`, ask diff_size and diff_unit about
    # the same two versions, and the diff was a long catch-up's costliest step after the call.
    from difflib import SequenceMatcher

    a, b = diff_tokens(old), diff_tokens(new)
    runs: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            runs.append(("=", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            runs.append(("-", "".join(a[i1:i2])))
        if j2 > j1:
            runs.append(("+", "".join(b[j1:j2])))
    return tuple(runs)


def diff_unit(old: str, new: str) -> str:
    """What diff_size counts: "characters" when the changes are all CJK, "words" when none
    is, else "characters and words" (it counts a CJK character and a Latin word alike: a
    new `第6件事：我的订单号是 ORD-776，金额五千元` read "+16 characters", 6 and ORD-776
    two of them)."""
    tokens = [t for op, run in word_diff(old, new) if op != "="
              for t in diff_tokens(run) if any(c.isalnum() for c in t)]
    cjk = sum(1 for t in tokens if re.fullmatch(f"[{CJK}]", t))
    if not cjk:
        return "words"
    return "characters" if cjk == len(tokens) else "characters and words"


def diff_size(old: str, new: str) -> tuple[int, int]:
    """Words (CJK characters) added and removed from `old` to `new`."""
    added = removed = 0
    for op, text in word_diff(old, new):
        words = sum(1 for t in diff_tokens(text) if any(c.isalnum() for c in t))
        if op == "+":
            added += words
        elif op == "-":
            removed += words
    return added, removed


def covered_turn(record: SummaryRecord, turn_of: Mapping[int, int]) -> int | None:
    """The last turn a version covers: summary ids are message ids, the user counts turns."""
    return max((turn_of[i] for i in record.covered_ids if i in turn_of), default=None)
