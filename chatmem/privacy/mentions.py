"""Where a value is mentioned in a text: the rule `facts forget --purge` erases by.

A purge must erase what was said about the user and nothing else. A value is
mentioned where it stands as a whole word in scripts that put spaces between
words (`Ada` in "I am Ada." or "Ada's", never inside "adaptive" or "Canada"),
as the exact string in scripts that do not (西湖 in 我们去西湖了; Hangul is
counted with them because particles are written onto the word, in syllables or in the
jamo NFD spells them with, never part of a syllable), and a number
only where it is not part of a longer one (4471 not in 144712, 3.4471 or
1,4471). Letters match in any case by Unicode's rules (`fold`: José/JOSÉ,
Straße/STRASSE, Дима/ДИМА, Σίσυφος/ΣΊΣΥΦΟΣ, é written as one character or
two) and with or without the accents search folds out (José Núñez/Jose Nunez,
Müller/Muller but not Mueller, Nguyễn/Nguyen: whatever `logs -q` finds by the
value is a mention), in the full-width forms Chinese and Japanese input methods type
(Ｂｅｉｊｉｎｇ, １３８００１３８０００), with any apostrophe a keyboard or a
phone puts in (O'Brien/O’Brien), with characters that draw nothing inside it
(李\u200b雷, a zero-width space pasted from a web page, reads as 李雷), with traditional
Chinese characters simplified text never writes as themselves (臺北 mentions 台北; 乾隆 does
not mention 干隆, nor 於梅 于梅: 乾 and 於 are simplified characters too, search's wider fold
finds them, `near_mentions.other_spellings`, a purge does not erase them), and a run of
spaces in the value matches any run of whitespace, so a value broken over two lines is
still found. Between two Han or Kana characters of the value a text may put any run of
whitespace, or none (王　芳 and 王 芳 mention 王芳: a roster pads a two-character name to
the width of three with a full-width space), where the spaced form stands apart: with no
Han, Kana or other character of a script written without spaces glued on either side
(`_spaced_apart`).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from chatmem import fts
from chatmem.graphemes import grapheme_start
from chatmem.lazy_patterns import lazy
from chatmem.privacy.prefixes import is_prefix
from chatmem.text import INVISIBLE

MARKER = "[forgotten]"
MIN_CHARACTERS = 2
"""A shorter value (one letter, one character) stands alone too often to be searched out."""

_HANGUL_JAMO = "\u1100-\u11ff\ua960-\ua97f\ud7b0-\ud7ff"
"""The letters a Hangul syllable is written as in NFD (macOS file names, some input
methods): `fold` decomposes every syllable into them."""
# Scripts written without spaces between words: a mention there is the exact string.
_UNSPACED = lazy(rf"[{fts.CJK}{_HANGUL_JAMO}\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]")
_JAMO = lazy(rf"[{_HANGUL_JAMO}]")
_HAN_KANA = ("\u3005\u3007\u3040-\u30fa\u30fc-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
             "\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f")
"""Han and Kana (not the katakana middle dot, which parts words): the characters Chinese and
Japanese write names in without spaces, so a space between two of them is layout."""
_HAN_KANA_CHARACTER = lazy(f"[{_HAN_KANA}]")
_SPACED_HAN = lazy(rf"[{_HAN_KANA}]\s+[{_HAN_KANA}]")
_LAYOUT_SPACE = r"\s*"
_WORD_SPACE = r"\s+"
_NUMBER_GLUE = ".,"
_APOSTROPHES = dict.fromkeys(map(ord, "\u2018\u2019\u02bc"), "'")
"""Apostrophes a phone or a word processor types for `'`."""
_TYPED_FOR = {**_APOSTROPHES, **dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2212\ufe63"),
                                              "-")}
"""And hyphens and dashes one types for `-` (a non-breaking hyphen, a figure dash, an en
dash, a minus): ORD‑7731‑QX and 415‒555‒0142 write ORD-7731-QX and 415-555-0142. Not the
em dash, which parts words (a—b)."""
_DRAWN_NOTHING: dict[int, None] = dict.fromkeys(map(ord, INVISIBLE))
_HALF_WIDTH_VOICING = "\uff9e\uff9f"


@dataclass(frozen=True, order=True)
class Span:
    """One mention: text[start:end]."""

    start: int
    end: int


def only_markers(value: str) -> bool:
    """Whether `value` has nothing left but MARKER (and punctuation): all of it was erased.
    A value that never held the marker is not erased, whatever it is made of (🍵, ★)."""
    return MARKER in value and not any(ch.isalnum() for ch in value.replace(MARKER, ""))


def searchable(value: str) -> bool:
    """Whether a purge looks for `value` at all (see MIN_CHARACTERS)."""
    shown = value.translate(_DRAWN_NOTHING).strip()
    return len(unicodedata.normalize("NFC", shown)) >= MIN_CHARACTERS


def fold(text: str, wide: bool = False) -> str:
    """`text` as a purge compares it: as search reads it (`fts.folded`: full-width forms as
    ASCII, without the characters that draw nothing, accents and other combining marks out,
    so Jose Nunez is José Núñez, Muller Müller and Nguyen Nguyễn, as `logs -q` finds them;
    only the traditional Chinese characters simplified text never writes as themselves as
    simplified, unless `wide`: 臺 as 台, not 乾 as 干),
    then Unicode's default caseless matching (case folded, canonically decomposed, so ß is
    ss), with Turkish dotted and dotless i as one letter (İstanbul, ISTANBUL, ıstanbul:
    people type the name on whatever keyboard they have)."""
    text = fts.folded(text.translate(_TYPED_FOR), exact=not wide)
    folded = unicodedata.normalize("NFD", text.casefold())
    return folded.replace("\u0131", "i").replace("i\u0307", "i")


def needle(value: str) -> str:
    """The longest piece of `value` that every mention of it in ASCII text holds as written,
    up to ASCII case ("" when none): what the store narrows rows of ASCII text by with a
    plain LIKE. It reads every row holding another character: `fold` makes a mention of
    much written otherwise (José and Ｊｏｓｅ mention Jose, STRASSE mentions Straße).

    Only ASCII characters between ASCII characters count: one next to a mark or another
    letter may be one character with it in the value (é, ŉ).
    """
    value = unicodedata.normalize("NFC", value.translate(_DRAWN_NOTHING).strip())
    best, run = "", ""
    for at, ch in enumerate(value):
        if value[max(at - 1, 0):at + 2].isascii() and not ch.isspace():
            run += ch
            best = max(best, run, key=len)
        else:
            run = ""
    return best


def needles(value: str) -> list[str]:
    """What a row of ASCII text mentioning `value` holds one of at least, in some ASCII
    case, once the characters that draw nothing are taken out (A\u200bda mentions Ada): its
    `needle`, and an amount's in its other forms; none when the needle is empty (every row
    may mention it)."""
    from chatmem.privacy import long_numbers
    from chatmem.privacy.date_forms import date_of
    from chatmem.privacy.number_forms import amount_of
    from chatmem.privacy.number_forms import needles as amount_needles
    from chatmem.privacy.phones import needle as number_needle

    # A phone number is written in many layouts (415.555.0134, +14155550134): only its
    # last digits are sure to stand together.
    found = number_needle(value) or needle(value)
    if not found:
        return []
    if (digits := long_numbers.long_number_of(value)) is not None:  # grouped: 4111 1111 …
        return [long_numbers.needle(digits)]
    amount = amount_of(value)  # written in words too (fifteen thousand): their needles
    # A date's every form in ASCII holds its day in digits (May 7, 2023-05-07, 7th of May),
    # and a form that may be it, read the other way round, its month.
    date = date_of(value)
    return [found, *(amount_needles(amount) if amount is not None else []),
            *([str(date.day), str(date.month)] if date is not None else [])]


def mention_spans(text: str, value: str, wide: bool = False) -> list[Span]:
    """The places `value` is mentioned in `text`, left to right, never overlapping; `wide`:
    folding traditional Chinese as search does (`fold`)."""
    value = value.strip()
    if not searchable(value):
        return []
    from chatmem.privacy.date_forms import date_of, date_spans
    from chatmem.privacy.long_numbers import long_number_of, long_number_spans
    from chatmem.privacy.number_forms import amount_of, amount_spans
    from chatmem.privacy.phones import find

    spans = _written_spans(text, value, wide)
    if numbers := find(text, value).same:  # the same phone number, laid out otherwise
        spans = _merged(sorted([*spans, *(Span(*s) for s in numbers)]))
    if (amount := amount_of(value)) is not None:  # the same amount in other words
        spans = _merged(sorted([*spans, *(Span(*s) for s in amount_spans(text, amount)
                                          if _stands_alone(text, *s))]))
    if (date := date_of(value)) is not None:  # the same date in digits or numerals
        spans = _merged(sorted([*spans, *(Span(*s) for s in date_spans(text, date))]))
    if (digits := long_number_of(value)) is not None:  # a card's or an ID's, grouped
        spans = _merged(sorted([*spans, *(Span(*s) for s in long_number_spans(text, digits))]))
    return spans


def _written_spans(text: str, value: str, wide: bool) -> list[Span]:
    if text.isascii() and value.isascii():  # the common case, where folding is lower()
        pattern = re.compile(r"\s+".join(re.escape(part) for part in value.split()),
                             re.IGNORECASE)
        return _alone(text, pattern, text, None)
    pieces, gaps = _pieces(value, wide)
    folded = fold(text, wide)
    # A value of marks alone (ऺ়) folds to nothing: there is nothing to find.
    if not pieces or max(pieces, key=len) not in folded:
        return []
    spelled = re.escape(pieces[0]) + "".join(
        gap + re.escape(piece) for gap, piece in zip(gaps, pieces[1:], strict=True))
    return _alone(text, re.compile(spelled), folded, _folded_offsets(text, wide))


def _pieces(value: str, wide: bool) -> tuple[list[str], list[str]]:
    """`value` folded, cut where a mention of it may hold whitespace, and what may stand in
    each cut: any run of whitespace between its words, any or none between two of its Han
    or Kana characters (a space there is layout, 王　芳, whether in the text or the value)."""
    pieces: list[str] = []
    gaps: list[str] = []
    base = ""  # the last character of the value that is not a mark
    for word in value.split():
        for at, ch in enumerate(fold(word, wide)):
            mark = unicodedata.category(ch)[0] == "M"
            layout = not mark and _is_han_kana(base) and _is_han_kana(ch)
            if pieces and (layout or at == 0):
                gaps.append(_LAYOUT_SPACE if layout else _WORD_SPACE)
                pieces.append(ch)
            elif pieces:
                pieces[-1] += ch
            else:
                pieces.append(ch)
            base = base if mark else ch
    return pieces, gaps


def _is_han_kana(ch: str) -> bool:
    return bool(ch) and _HAN_KANA_CHARACTER.match(ch) is not None


def _alone(text: str, pattern: re.Pattern[str], searched: str,
           offsets: tuple[dict[int, int], dict[int, int]] | None) -> list[Span]:
    """The matches of `pattern` in `searched` (`text`, or `text` folded with `offsets`
    mapping its character boundaries back) that stand alone in `text`."""
    spans: list[Span] = []
    position = 0
    while (found := pattern.search(searched, position)) is not None:
        start, end = found.span()
        if offsets is not None:
            starts, ends = offsets
            if start not in starts or end not in ends:  # half of a character (ß, é)
                position = start + 1
                continue
            start, end = starts[start], ends[end]
        if _stands_alone(text, start, end):
            spans.append(Span(start, end))
            position = found.end()
        else:
            position = found.start() + 1
    return spans


def _folded_offsets(text: str, wide: bool) -> tuple[dict[int, int], dict[int, int]]:
    """Where each character of `text` (with the marks on it; a Hangul syllable written as
    jamo is one) starts and ends in fold(text): folded offset -> offset in `text`, for
    starts and for ends."""
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    offset = at = 0
    while at < len(text):
        after = at + 1
        while after < len(text) and _continues_character(text, after):
            after += 1
        starts[offset] = at
        offset += len(fold(text[at:after], wide))
        # A character that folds to nothing (a zero-width space) shares its offset with
        # its neighbours: a mention starts at the letter after it and ends before it.
        ends.setdefault(offset, after)
        at = after
    return starts, ends


def _continues_character(text: str, at: int) -> bool:
    """Whether text[at] is part of the character before it: a mark on it, a half-width voicing
    mark (ｶﾞ is ガ), a jamo of the same syllable (서 is not mentioned in the jamo of 섰)."""
    if unicodedata.category(text[at])[0] == "M" or text[at] in _HALF_WIDTH_VOICING:
        return True
    return bool(_JAMO.match(text[at])) and not grapheme_start(text, at)


def kept_spans(text: str, values: Iterable[str], keep: Iterable[str]) -> list[Span]:
    """Mentions of `values` that are part of a mention of a longer name in `keep`: 张伟 in
    张伟明 when 张伟明 is a name the user has stored. Chinese puts no space after a name, so
    the text alone cannot tell 张伟明 (someone else) from 张伟 then 明天; a name stored
    whole can. (Ann in Anna needs none of this: Anna is a longer word.)"""
    inside = _inside_of([s for name in keep for s in mention_spans(text, name)])
    return sorted({s for value in values for s in mention_spans(text, value) if inside(s)})


def _inside_of(longer: list[Span]) -> Callable[[Span], bool]:
    """Whether a span lies inside one of `longer` other than itself. Each span looked
    through every longer one: a 28 KB message of 张伟明和张伟 took 1.8 s a look."""
    ordered = sorted(longer)
    starts = [k.start for k in ordered]
    reach = list(accumulate((k.end for k in ordered), max))
    furthest: dict[int, int] = {}  # of those starting at a place
    for k in ordered:
        furthest[k.start] = k.end

    def inside(s: Span) -> bool:
        # One starting before it and reaching its end holds it; one starting with it, only
        # when it ends after it (one ending with it is the span itself).
        before = bisect_left(starts, s.start)
        return (before > 0 and reach[before - 1] >= s.end) or furthest.get(s.start, -1) > s.end

    return inside


def begins_longer_name(name: str, value: str) -> bool:
    """Whether `name` is one word of a script written without spaces that begins with `value`
    and goes on (张伟明 for 张伟): a longer name, not a phrase about `value` ("Ada and more"),
    nor a place that ends with it (杭州西湖 mentions 西湖)."""
    held, value = fold(name.strip()), fold(value.strip())
    return len(held) > len(value) and held.startswith(value) \
        and all(_UNSPACED.match(c) for c in held[len(value):])


def unsure(text: str, span: Span) -> bool:
    """Whether the mention text[span] is followed by a character of a script written without
    spaces (张伟 in 张伟说, 张伟明天, 张伟明): a longer name may go on there."""
    return span.end < len(text) and bool(_UNSPACED.match(text[span.end - 1])) \
        and bool(_UNSPACED.match(text[span.end]))


def all_spans(text: str, values: Iterable[str], keep: Iterable[str] = ()) -> list[Span]:
    """Mentions of any of `values`, merged where they overlap, left to right; none that is
    part of a longer name in `keep` (`kept_spans`)."""
    values, keep = list(values), list(keep)
    kept = set(kept_spans(text, values, keep)) if keep else set()
    return _merged(sorted(s for value in values for s in mention_spans(text, value)
                          if s not in kept))


def _merged(spans: Sequence[Span]) -> list[Span]:
    """Sorted `spans` with those that overlap made one."""
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


def erase_mentions(text: str, values: Iterable[str], marker: str = MARKER,
                   keep: Iterable[str] = ()) -> str:
    """`text` with every mention of any of `values` replaced by `marker`, but those inside a
    longer name in `keep`."""
    return replace_spans(text, all_spans(text, values, keep), marker)


def _stands_alone(text: str, start: int, end: int) -> bool:
    """The match text[start:end] is not the inside of a longer word or number."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    if _continues(text[start], before) and not _after_prefix(text, start):
        return False
    if _continues(text[end - 1], after):
        return False
    if not _spaced_apart(text, start, end):
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


def _after_prefix(text: str, start: int) -> bool:
    """Whether the word glued before text[start] is one of the letters Arabic or Hebrew
    write onto the next word, as Korean writes its particles after one (`prefixes`): in
    وأحمد, بأحمد, לדוד the name is mentioned, and erased with the prefix kept."""
    at = start
    while at > 0 and _word_character(text[at - 1]):
        at -= 1
    return is_prefix(text[at:start], text[start])


def _word_character(ch: str) -> bool:
    """A letter, digit or mark of a script that spaces its words (or `_`)."""
    if ch == "_":
        return True
    return unicodedata.category(ch)[0] in "LMN" and not _UNSPACED.match(ch)


def _spaced_apart(text: str, start: int, end: int) -> bool:
    """Whether text[start:end], when whitespace parts two Han or Kana characters in it (王　芳,
    王 芳), stands apart: what is glued on to either side is no character of a script written
    without spaces. A padded name is an item of its own (参会：王　芳、李　雷); 王 芳草 and
    我姓王 芳芳 are two words that happen to spell the name across a space."""
    if not _SPACED_HAN.search(text[start:end].translate(_DRAWN_NOTHING)):
        return True
    before, after = start - 1, end
    while before >= 0 and text[before] in INVISIBLE:
        before -= 1
    while after < len(text) and text[after] in INVISIBLE:
        after += 1
    return not any(0 <= at < len(text) and _UNSPACED.match(text[at]) for at in (before, after))
