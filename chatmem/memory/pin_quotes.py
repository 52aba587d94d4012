"""Short verbatim quotes around a pinned detail, so a bare "77 EUR" still says what it was.

The drift guard pins a detail a summary dropped with a quote of the turn it was said in
(chatmem.memory.pins); a quote is a piece of one line, never cut inside a word, an id or
a character.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from functools import cached_property
from heapq import heapify, heappop
from itertools import accumulate

from chatmem.fts import CJK
from chatmem.graphemes import grapheme_start
from chatmem.lazy_patterns import lazy
from chatmem.memory.anchors import present, width_folded

_CJK = lazy(f"[{CJK}]")
# A sentence holds the marks that end none ("1.5", "e.g.,"): tried from each place before
# one, a sentence failed at it, and 16 KB of words then "1.5" took 3 s.
_SENTENCE = lazy(r"(?:[^.!?。！？\n]|[.!?](?!\s|$))*(?:[.!?](?=\s|$)|[。！？]|\n|$)")
_WORD_CHAR = lazy(r"[A-Za-z0-9_\-./@#]")
QUOTE_WIDTH = 56
"""Longest quote, in columns: a CJK character counts two (it costs more tokens, too)."""


def quote_around(content: str, anchors: Sequence[str], width: int = QUOTE_WIDTH) -> str:
    """A verbatim piece of `content` around `anchors`, about `width` columns, on one line.

    The piece stays within the sentences that hold the anchors and grows
    evenly around them; cut ends are marked "…" and never split a Latin word,
    an id or a character (`_inside`). When the anchors lie too far apart, it is the first one's.
    """
    line = _Line(content)
    spans = [span for span in map(line.find, anchors) if span is not None]
    if not spans:
        return ""
    return line.quote(min(spans)[0], max(e for _, e in spans), min(spans), width)[0]


class _Line:
    """A message as one line, read once however many quotes are cut from it: a quote cut
    from a fresh copy for each of 4,000 ids took 39 s, growing with their square."""

    def __init__(self, content: str) -> None:
        self.text = " ".join(content.split())
        self.folded = self.text.casefold()
        self.form = width_folded(self.folded)
        """As `present` reads it: full-width letters and digits are ASCII ones."""
        # Casefolding lengthens some characters (ß is ss, ﬃ is ffi): a place found in
        # `folded` is taken back to its character in `text`. Read as a place in `text`,
        # 30 ß before an id put the quote past the text's end (IndexError).
        self._origin: list[int] | None = None
        if len(self.folded) != len(self.text):
            self._origin = [at for at, c in enumerate(self.text) for _ in c.casefold()]
            self._origin.append(len(self.text))

    def place(self, at: int) -> int:
        """The place in `text` of the character a place in `folded` or `form` is of."""
        return at if self._origin is None else self._origin[at]

    @cached_property
    def _widths(self) -> list[int]:
        """Columns before each place: a span's width without counting it again."""
        return [0, *accumulate(2 if _CJK.match(c) else 1 for c in self.text)]

    @cached_property
    def _ends(self) -> tuple[list[int], list[int]]:
        """Where each sentence ends, and where each one that says something ends."""
        sentences = list(_SENTENCE.finditer(self.text))
        return [m.end() for m in sentences], [m.end() for m in sentences if m.group().strip()]

    def find(self, anchor: str) -> tuple[int, int] | None:
        """The anchor's first place (case and spacing aside), or None."""
        needle = " ".join(anchor.split()).casefold()
        at = self.folded.find(needle)
        if at < 0 or not needle:
            return None
        return self.place(at), self.place(at + len(needle) - 1) + 1

    def columns(self, start: int, end: int) -> int:
        return self._widths[end] - self._widths[start]

    def quote(self, at: int, end: int, first: tuple[int, int],
              width: int) -> tuple[str, int]:
        """The quote around at..end (`first`, the first anchor's place, if too wide), and
        where it ends."""
        text = self.text
        if self.columns(at, end) > width:
            at, end = first
        # The sentences that hold at..end: from the end of the last one said before it.
        ends, said_ends = self._ends
        said = bisect_right(said_ends, at)
        start = said_ends[said - 1] if said else 0
        after = bisect_left(ends, end)
        stop = ends[after] if after < len(ends) else len(text)
        while start < at and text[start].isspace():
            start += 1
        left, right = at, end
        room = width - self.columns(at, end)
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
        return ("…" if left > start else "") + piece + ("…" if right < stop else ""), right


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
        if here:
            found.update(_quotes(here, content, turn))
    return found


def _quotes(here: list[str], content: str, turn: int | None) -> dict[str, tuple[int | None, str]]:
    """`first_quotes` of one message: a quote around all of `here`, then around those it
    does not hold, and so on.

    Each anchor is found once and the quotes are cut in order of place. A quote can
    hold only an anchor that is somewhere before its end (width-folded, as `present`
    reads: ORD-1 is in ＯＲＤ－１), so only those are asked, never every anchor for
    every quote.
    """
    line = _Line(content)
    rank = {a: n for n, a in enumerate(here)}
    by_place: list[tuple[tuple[int, int], int, str]] = []
    by_form: list[tuple[int, int, str]] = []
    for anchor in here:
        place = line.find(anchor)
        if place is not None:
            by_place.append((place, rank[anchor], anchor))
        form = line.form.find(width_folded(" ".join(anchor.split()).casefold()))
        if form >= 0:
            by_form.append((line.place(form), rank[anchor], anchor))
    by_place.sort()
    by_form.sort()
    ends = [(-end, n, anchor) for (_, end), n, anchor in by_place]
    heapify(ends)
    quotes: dict[str, tuple[int | None, str]] = {}
    first = low = 0
    while first < len(by_place):
        (at, first_end), _, _ = by_place[first]
        while ends[0][2] in quotes:
            heappop(ends)
        quote, right = line.quote(at, -ends[0][0], (at, first_end), QUOTE_WIDTH)
        asked = by_form[low:bisect_left(by_form, (right,), low)]
        held = sorted((a for _, _, a in asked if a not in quotes and present(a, quote)),
                      key=rank.__getitem__)
        if not held:  # cannot happen for an anchor of `content`; never loop on it
            break
        quotes.update((a, (turn, quote)) for a in held)
        while first < len(by_place) and by_place[first][2] in quotes:
            first += 1
        while low < len(by_form) and by_form[low][2] in quotes:
            low += 1
    quotes.update((a, (turn, "")) for a in here if a not in quotes)
    return quotes
