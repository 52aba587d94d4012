"""Short verbatim quotes around a pinned detail, so a bare "77 EUR" still says what it was.

The drift guard pins a detail a summary dropped with a quote of the turn it was said in
(chatmem.memory.pins); a quote is a piece of one line, never cut inside a word, an id or
a character.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from chatmem.fts import CJK
from chatmem.graphemes import grapheme_start
from chatmem.memory.anchors import present

_CJK = re.compile(f"[{CJK}]")
_SENTENCE = re.compile(r"[^.!?。！？\n]*(?:[.!?](?=\s|$)|[。！？]|\n|$)")
_WORD_CHAR = re.compile(r"[A-Za-z0-9_\-./@#]")
QUOTE_WIDTH = 56
"""Longest quote, in columns: a CJK character counts two (it costs more tokens, too)."""


def quote_around(content: str, anchors: Sequence[str], width: int = QUOTE_WIDTH) -> str:
    """A verbatim piece of `content` around `anchors`, about `width` columns, on one line.

    The piece stays within the sentences that hold the anchors and grows
    evenly around them; cut ends are marked "…" and never split a Latin word,
    an id or a character (`_inside`). When the anchors lie too far apart, it is the first one's.
    """
    text = " ".join(content.split())
    folded = text.casefold()
    spans = []
    for anchor in anchors:
        needle = " ".join(anchor.split()).casefold()
        at = folded.find(needle)
        if at >= 0 and needle:
            spans.append((at, at + len(needle)))
    if not spans:
        return ""
    at, end = min(spans)[0], max(e for _, e in spans)
    if _columns(text[at:end]) > width:
        at, end = min(spans)
    start, stop = 0, len(text)
    for match in _SENTENCE.finditer(text):
        if match.end() <= at and match.group().strip():
            start = match.end()
        if match.end() >= end:
            stop = match.end()
            break
    while start < at and text[start].isspace():
        start += 1
    left, right = at, end
    room = width - _columns(text[at:end])
    while left > start or right < stop:  # grow evenly, left first
        grow_left = left > start and (right >= stop or at - left <= right - end)
        cost = _columns(text[left - 1] if grow_left else text[right])
        if cost > room:
            break
        room -= cost
        if grow_left:
            left -= 1
        else:
            right += 1
    while start < left < at and _inside(text, left):
        left += 1
    while end < right < stop and _inside(text, right):
        right -= 1
    piece = text[left:right].strip()
    return ("…" if left > start else "") + piece + ("…" if right < stop else "")


def _inside(text: str, at: int) -> bool:
    """Whether a cut at `at` splits an id, a Latin word or what a reader sees as one
    character (a flag, an emoji family, a letter and its accent)."""
    return not grapheme_start(text, at) or bool(_WORD_CHAR.match(text[at - 1])
                                                 and _WORD_CHAR.match(text[at]))


def _columns(text: str) -> int:
    return sum(2 if _CJK.match(c) else 1 for c in text)


def first_quotes(
    anchors: Iterable[str], said: Iterable[tuple[int | None, str]]
) -> dict[str, tuple[int | None, str]]:
    """Anchor → (turn, quote) from the earliest message in `said` ((turn, content), oldest
    first) that holds it. Anchors first said in one message share a quote when one holds
    them all; those too far apart get quotes of their own, so every quote shown beside a
    pinned value holds that value."""
    wanted = list(dict.fromkeys(anchors))
    found: dict[str, tuple[int | None, str]] = {}
    for turn, content in said:
        if len(found) == len(wanted):
            break
        here = [a for a in wanted if a not in found and present(a, content)]
        while here:
            quote = quote_around(content, here)
            held = [a for a in here if present(a, quote)]
            if not held:  # cannot happen for an anchor of `content`; never loop on it
                found.update((a, (turn, "")) for a in here)
                break
            found.update((a, (turn, quote)) for a in held)
            here = [a for a in here if a not in held]
    return found
