"""Where a value is mentioned in a text: the rule `facts forget --purge` erases by.

A purge must erase what was said about the user and nothing else. A value is
mentioned where it stands as a whole word in scripts that put spaces between
words (`Ada` in "I am Ada." or "Ada's", never inside "adaptive" or "Canada"),
as the exact string in scripts that do not (西湖 in 我们去西湖了; Hangul is
counted with them because particles are written onto the word), and a number
only where it is not part of a longer one (4471 not in 144712, 3.4471 or
1,4471). Letters match in any case; a run of spaces in the value matches any
run of whitespace, so a value broken over two lines is still found.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from chatmem import fts

MARKER = "[forgotten]"
MIN_CHARACTERS = 2
"""A shorter value (one letter, one character) stands alone too often to be searched out."""

# Scripts written without spaces between words: a mention there is the exact string.
_UNSPACED = re.compile(rf"[{fts.CJK}\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]")
_NUMBER_GLUE = ".,"


@dataclass(frozen=True, order=True)
class Span:
    """One mention: text[start:end]."""

    start: int
    end: int


def searchable(value: str) -> bool:
    """Whether a purge looks for `value` at all (see MIN_CHARACTERS)."""
    return len(value.strip()) >= MIN_CHARACTERS


def mention_spans(text: str, value: str) -> list[Span]:
    """The places `value` is mentioned in `text`, left to right, never overlapping."""
    value = value.strip()
    if not searchable(value):
        return []
    pattern = re.compile(r"\s+".join(re.escape(part) for part in value.split()), re.IGNORECASE)
    spans: list[Span] = []
    position = 0
    while (found := pattern.search(text, position)) is not None:
        start, end = found.span()
        if _stands_alone(text, start, end):
            spans.append(Span(start, end))
            position = end
        else:
            position = start + 1
    return spans


def all_spans(text: str, values: Iterable[str]) -> list[Span]:
    """Mentions of any of `values`, merged where they overlap, left to right."""
    spans = sorted(s for value in values for s in mention_spans(text, value))
    merged: list[Span] = []
    for span in spans:
        if merged and span.start < merged[-1].end:
            merged[-1] = Span(merged[-1].start, max(merged[-1].end, span.end))
        else:
            merged.append(span)
    return merged


def replace_spans(text: str, spans: Sequence[Span], marker: str = MARKER) -> str:
    """`text` with each span replaced by `marker`; everything between them as it was."""
    pieces: list[str] = []
    last = 0
    for span in spans:
        pieces += [text[last:span.start], marker]
        last = span.end
    pieces.append(text[last:])
    return "".join(pieces)


def erase_mentions(text: str, values: Iterable[str], marker: str = MARKER) -> str:
    """`text` with every mention of any of `values` replaced by `marker`."""
    return replace_spans(text, all_spans(text, values), marker)


def _stands_alone(text: str, start: int, end: int) -> bool:
    """The match text[start:end] is not the inside of a longer word or number."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    if _continues(text[start], before) or _continues(text[end - 1], after):
        return False
    # 3.4471 and 4471,5 are longer numbers, not 4471 followed by punctuation.
    if text[start].isdigit() and before in _NUMBER_GLUE and start > 1 \
            and text[start - 2].isdigit():
        return False
    return not (text[end - 1].isdigit() and after in _NUMBER_GLUE
                and end + 1 < len(text) and text[end + 1].isdigit())


def _continues(edge: str, neighbour: str) -> bool:
    """Whether `neighbour` makes `edge` (a first or last character) part of a longer word."""
    if not neighbour:
        return False
    return _word_character(edge) and _word_character(neighbour)


def _word_character(ch: str) -> bool:
    """A letter, digit or mark of a script that spaces its words (or `_`)."""
    if ch == "_":
        return True
    return unicodedata.category(ch)[0] in "LMN" and not _UNSPACED.match(ch)
