"""What a search reads as a mention of a value and a purge does not erase
(chatmem.privacy.mentions is the rule it erases by): a value written with a character a
search folds to one of its own, and digit runs that may be another number. Shown to the
user, never erased: perhaps someone else."""

from __future__ import annotations

import unicodedata
from bisect import bisect_left
from collections.abc import Iterable
from itertools import accumulate

from chatmem.privacy.mentions import Span, all_spans, kept_spans, mention_spans


def other_spellings(text: str, values: Iterable[str], keep: Iterable[str] = ()) -> list[Span]:
    """What search's wider fold reads as a mention of `values` and a purge does not: written
    with a character simplified text also writes as itself where the value has another (乾隆
    for 干隆, 於梅 for 于梅), or the other way round. Perhaps someone else: shown, not erased.
    None overlaps a mention or one kept inside a longer name."""
    values, keep = list(values), list(keep)
    if text.isascii():
        return []
    taken = all_spans(text, values, keep) + kept_spans(text, values, keep)
    wide = sorted({s for value in values for s in mention_spans(text, value, wide=True)})
    return _clear_of(wide, taken)


def other_numbers(text: str, values: Iterable[str]) -> list[Span]:
    """Digit runs that may write a phone number among `values` and may be another number
    (555-0134 for +1 415 555 0134: chatmem.privacy.phones), or a date among them read the
    other way round (7/5/2023 for May 7, 2023: chatmem.privacy.date_forms): shown, not
    erased. None overlaps a mention."""
    from chatmem.privacy.date_forms import date_of, perhaps_spans
    from chatmem.privacy.phones import find

    values = list(values)
    taken = all_spans(text, values)
    maybe = sorted({Span(*s) for value in values for s in find(text, value).unsure}
                   | {Span(*s) for value in values if (date := date_of(value)) is not None
                      for s in perhaps_spans(text, date)})
    return _clear_of(maybe, taken)


def _clear_of(spans: list[Span], taken: list[Span]) -> list[Span]:
    """`spans` that overlap none of `taken`. Each looked through every one taken: a 200 KB
    message of numbers took 6.5 s a look, and a purge looks twice."""
    ordered = sorted(taken)
    starts = [t.start for t in ordered]
    # The furthest any span taken so far reaches: one starting before s ends overlaps s
    # when it reaches past s's start.
    reach = list(accumulate((t.end for t in ordered), max))
    clear = []
    for s in spans:
        before = bisect_left(starts, s.end)
        if before == 0 or reach[before - 1] <= s.start:
            clear.append(s)
    return clear


def spelled_otherwise(value: str) -> list[tuple[str, str]]:
    """(other, own): the characters a search reads as one of `value`'s that a purge does not
    (chatmem.chinese_variants: `simplified` against `solely_traditional`), so mentions
    written with them are kept: 于梅 gives [("於", "于")]; 台北 gives 枱 for 台 (a Hong Kong
    spelling), never 臺, which both read as 台."""
    from chatmem.chinese_variants import simplified, solely_traditional

    wide, exact = simplified(), solely_traditional()
    folding_to: dict[int, list[int]] = {}
    found: list[tuple[str, str]] = []
    for own in dict.fromkeys(value):
        folded = wide.get(ord(own), ord(own))
        if folded == ord(own) and ord(own) not in wide.values():
            continue  # no other character is read as this one
        if not folding_to:
            for key, to in wide.items():
                folding_to.setdefault(to, []).append(key)
        purged = exact.get(ord(own), ord(own))
        for other in (folded, *folding_to.get(folded, ())):
            # A compatibility ideograph (U+F9xx) is the same character written again.
            shown = unicodedata.normalize("NFC", chr(other))
            if shown != own and exact.get(other, other) != purged and (shown, own) not in found:
                found.append((shown, own))
    return found
