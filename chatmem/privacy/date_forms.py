"""A date a purge erases in every way it is written: in Chinese (十二月三日 as 12月3日, １２月３日
and 12月3号; 2026年12月3日 as 二〇二六年十二月三日), in numbers (2023-05-07, 2023/5/7, 17/5/2023,
5/17/23) and in English words (May 7, 2023; 7 May 2023; the 7th of May; May 7th).

A value is a date when it is one of those alone: a month and a day, perhaps with a year. A
text mentions it where it writes the same month and day, standing whole (the 2月3日 of
12月3日 is none, nor the 7/5 of 17/5/2023), and, when the value gives a year, the same year
(a two-digit year, 7/5/23, is its last two digits).

Day and month written as two numbers up to 12 (7/5/2023) read as two dates: 7 May in most of
the world, July 5 in the United States. Such a form is `either_way`, and it is the same date
only as another form in the same order (07/05/2023, 7-5-2023, 7/5/23): purging `7/5/2023`
erases those and not `May 7` nor `July 5`, and purging `May 7, 2023` keeps `7/5/2023`, which
`perhaps_spans` reports (shown by a dry run, never erased, as a number that may be another
one is). Year first (2023/5/7, 2023-05-07) reads one way only, as ISO 8601 and Chinese write
it. A month's name counts capitalised (May, MAY, Sept.), never lower case (`may 7` is the
verb), and a day is written in digits (not `seventh`). Without a year, numbers alone (7/5)
are no date: a fraction, a score. A date written without a year is perhaps a value's with
one (5月7日 for 2023年5月7日, another year's maybe): reported as `either_way` ones are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from chatmem.text_caches import text_cache

_NUMERALS = "〇零一二两三四五六七八九十"
_PART = rf"\d{{1,2}}|[{_NUMERALS}]{{1,3}}"
_YEAR_DIGITS = "〇零一二三四五六七八九"
_CHINESE = re.compile(
    rf"(?:(?P<y>\d{{4}}|[{_YEAR_DIGITS}]{{4}})\s?年\s?)?"
    rf"(?<![\d{_NUMERALS}])(?P<m>{_PART})\s?月\s?(?P<d>{_PART})"
    rf"(?:\s?[日号號]|(?![\d{_NUMERALS}])(?=$|[\s，。、,!?！？;；:：)）」』”\"'到至~～—那这前后晚早上下中午凌傍夜以之当的是起止]))")
"""A month and day: with 日 or 号, or without where the day ends the words (三月十五 那天, 3月15前,
3月15到20日): spoken so, the date still. A number running on into a count is another thing
(3月15人: fifteen people in March; 6月1.5万: an amount)."""
_YEAR_FIRST = re.compile(
    r"(?<![\d.:/-])(?P<y>\d{4})(?P<s>[-/.])(?P<dm>(?P<m>\d{1,2})(?P=s)(?P<d>\d{1,2}))"
    r"(?![\d]|[.:/-]\d)")
_YEAR_LAST = re.compile(
    r"(?<![\d.:/-])(?P<dm>(?P<a>\d{1,2})(?P<s>[-/.])(?P<b>\d{1,2}))(?P=s)"
    r"(?P<y>\d{4}|(?<=/)\d{2})(?![\d]|[.:/-]\d)")
"""Day and month, in either order, then the year: a two-digit year after slashes only (a dot
or a dash between three short numbers is a version, 1.2.23, or a score)."""
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")
_MONTH_FORMS = {form: n for n, name in enumerate(_MONTH_NAMES, 1)
                for form in (name, name[:3], *(["Sept"] if n == 9 else []))}
_MONTH = "(?P<mon{}>" + "|".join(sorted(
    {f for form in _MONTH_FORMS for f in (form, form.upper())}, key=len, reverse=True)) + ")"
_DAY = r"(?P<d{}>\d{{1,2}})(?:st|nd|rd|th|ST|ND|RD|TH)?"
_WORDS = re.compile(
    rf"\b(?P<dm>{_DAY.format(1)}\s+(?:of\s+)?{_MONTH.format(1)}\b\.?"
    rf"|{_MONTH.format(2)}\b\.?\s+(?:the\s+)?{_DAY.format(2)})"
    r"(?![\w:]|[.,]\d)(?:,?\s+(?P<y>\d{4})(?!\d))?")
"""The day before the month (7 May, the 7th of May) or after it (May 7th), perhaps a year."""
_DIGIT = re.compile(r"\d")
_LONGEST = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30,
            12: 31}


@dataclass(frozen=True)
class Date:
    """A value as a date: its month, day and year (None: not given). `either_way`: written
    as two numbers that read as a date both ways (7/5/2023), `month` the first as written
    and `day` the second."""

    month: int
    day: int
    year: int | None = None
    either_way: bool = False

    def readings(self) -> set[tuple[int, int]]:
        """(month, day) this may be."""
        return {(self.month, self.day), *([(self.day, self.month)] if self.either_way else [])}


@dataclass(frozen=True)
class _Said:
    date: Date
    start: int
    """Where the date starts with its year (or without: no year written)."""
    day_month: tuple[int, int]
    """Where its month and day are written, without the year."""
    end: int


@lru_cache(maxsize=512)
def _part(text: str) -> int | None:
    from chatmem.privacy.number_forms import zh_value

    if text.isdigit():
        return int(text)
    value = zh_value(text)
    return int(value) if value is not None and value.denominator == 1 else None


@lru_cache(maxsize=512)
def _year(text: str) -> int:
    if text.isdigit():
        return int(text)
    return int("".join(str(_YEAR_DIGITS.index(c) - (c != "〇")) for c in text))


def _valid(month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= _LONGEST[month]


def _dated(month: int | None, day: int | None, year: str | None,
           either_way: bool = False) -> Date | None:
    if month is None or day is None or not _valid(month, day):
        return None
    return Date(month, day, _year(year) if year else None, either_way)


@text_cache(maxsize=16)
def _said(text: str) -> tuple[_Said, ...]:
    """Every date `text` writes, in any form, left to right by where it starts. Cached: a
    purge reads each text it looks through six times (its mentions, those it keeps, those
    perhaps the date), 3 s of a 20,000-message dry run read anew each time."""
    found = []
    if "月" in text:
        for m in _CHINESE.finditer(text):
            date = _dated(_part(m["m"]), _part(m["d"]), m["y"])
            if date is not None:
                found.append(_Said(date, m.start(), (m.start("m"), m.end()), m.end()))
    if _DIGIT.search(text):
        for m in _YEAR_FIRST.finditer(text):
            if (date := _dated(int(m["m"]), int(m["d"]), m["y"])) is not None:
                found.append(_Said(date, m.start(), m.span("dm"), m.end()))
        for m in _YEAR_LAST.finditer(text):
            if (date := _numbers(int(m["a"]), int(m["b"]), m["y"])) is not None:
                found.append(_Said(date, m.start(), m.span("dm"), m.end()))
        for m in _WORDS.finditer(text):
            month = _MONTH_FORMS[(m["mon1"] or m["mon2"]).title()]
            if (date := _dated(month, int(m["d1"] or m["d2"]), m["y"])) is not None:
                found.append(_Said(date, m.start(), m.span("dm"), m.end()))
    return tuple(sorted(found, key=lambda s: (s.start, -s.end)))


def _numbers(a: int, b: int, year: str) -> Date | None:
    """Two numbers and a year (7/5/2023): the date they write, `either_way` when both orders
    are dates and differ."""
    first, second = _valid(b, a), _valid(a, b)  # day first; month first
    if first and second and a != b:
        return Date(a, b, _year(year), either_way=True)
    return _dated(b, a, year) if first else _dated(a, b, year) if second else None


@text_cache(maxsize=256)
def date_of(value: str) -> Date | None:
    """`value` as a Date, or None: not a month and day (perhaps with a year) alone."""
    value = value.strip()
    said = _said(value)
    return said[0].date if len(said) == 1 and (said[0].start, said[0].end) == (
        0, len(value)) else None


def _same_year(said: int | None, year: int) -> bool:
    # 23 in 7/5/23 is 2023 (or 1923: the last two digits are what was written).
    return said is not None and (said == year or (min(said, year) < 100
                                                  and said % 100 == year % 100))


def _spans(text: str, date: Date, sure: bool) -> list[tuple[int, int]]:
    spans = []
    for said in _said(text):
        if date.year is not None and said.date.year is None:
            # 5月7日 for 2023年5月7日: perhaps that day, perhaps another year's.
            if not sure and said.date.readings() & date.readings():
                spans.append((said.start, said.end))
            continue
        if date.year is not None and not _same_year(said.date.year, date.year):
            continue
        if said.date.either_way == date.either_way:
            same = sure and (said.date.month, said.date.day) == (date.month, date.day)
        else:  # one reads two ways: perhaps the other's date, perhaps not
            same = not sure and bool(said.date.readings() & date.readings())
        if same:
            spans.append((said.start, said.end) if date.year is not None or not sure
                         else said.day_month)
    return spans


def date_spans(text: str, date: Date) -> list[tuple[int, int]]:
    """Where `text` writes `date` (start, end), in any form: from the year when the date
    gives one, else its month and day (a year written with them is kept)."""
    return _spans(text, date, sure=True)


def perhaps_spans(text: str, date: Date) -> list[tuple[int, int]]:
    """Where `text` writes a date that may be `date` and may be another (7/5/2023 for May 7,
    2023, or the other way round; 5月7日 or May 7 with no year for 2023年5月7日): reported,
    never erased."""
    return _spans(text, date, sure=False)


_ZH_DIGITS = "〇一二三四五六七八九"


def _numerals(n: int) -> str:
    """1–31 in Chinese numerals: 三, 十, 十五, 二十一."""
    tens, ones = divmod(n, 10)
    return ((_ZH_DIGITS[tens] if tens > 1 else "") + ("十" if tens else "")
            + (_ZH_DIGITS[ones] if ones or not tens else ""))


def date_spellings(text: str) -> list[str]:
    """The Chinese dates `text` writes, each in the other ways a purge finds it (三月十五日
    typed: 3月15日; 3月15日 typed: 三月十五日), for a search to find them as it does (`logs
    -q 三月十五日` found nothing of a message saying 3月15日)."""
    if "月" not in text:
        return []
    found: list[str] = []
    for m in _CHINESE.finditer(text):
        date = _dated(_part(m["m"]), _part(m["d"]), m["y"])
        if date is None:
            continue
        digits = f"{date.month}月{date.day}日"
        zh = f"{_numerals(date.month)}月{_numerals(date.day)}日"
        if date.year is not None:
            digits = f"{date.year}年{digits}"
            zh = "".join(_ZH_DIGITS[int(c)] for c in str(date.year)) + f"年{zh}"
        found += [s for s in (digits, zh) if s not in m.group()]
    return list(dict.fromkeys(found))
