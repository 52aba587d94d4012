"""A Chinese date a purge erases in every way it is written: 十二月三日 as 12月3日, １２月３日
and 12月3号; 2026年12月3日 as 二〇二六年十二月三日.

A value is a date when it is a month and a day (月, then 日, 号 or 號), perhaps after a year
(年), each in digits (half or full width) or Chinese numerals. It is mentioned where a text
writes the same month and day, standing whole (the 2月3日 of 12月3日 is none), and, when
the value gives a year, the same year.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from chatmem.text_caches import text_cache

_NUMERALS = "〇零一二两三四五六七八九十"
_PART = rf"\d{{1,2}}|[{_NUMERALS}]{{1,3}}"
_YEAR_DIGITS = "〇零一二三四五六七八九"
_DATE = re.compile(
    rf"(?:(?P<y>\d{{4}}|[{_YEAR_DIGITS}]{{4}})\s?年\s?)?"
    rf"(?<![\d{_NUMERALS}])(?P<m>{_PART})\s?月\s?(?P<d>{_PART})\s?[日号號]")


@dataclass(frozen=True)
class Date:
    """A value as a date: its month, day and year (None: not given)."""

    month: int
    day: int
    year: int | None = None


@lru_cache(maxsize=512)
def _part(text: str) -> int | None:
    from chatmem.privacy.number_forms import zh_value

    if text.isdigit():
        return int(text)
    value = zh_value(text)
    return int(value) if value is not None and value.denominator == 1 else None


@lru_cache(maxsize=512)
def _year(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    return int("".join(str(_YEAR_DIGITS.index(c) - (c != "〇")) for c in text))


def _read(m: re.Match[str]) -> Date | None:
    month, day = _part(m["m"]), _part(m["d"])
    if month is None or day is None or not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return Date(month, day, _year(m["y"]) if m["y"] else None)


@text_cache(maxsize=256)
def date_of(value: str) -> Date | None:
    """`value` as a Date, or None: not a month and day (perhaps with a year) alone."""
    m = _DATE.fullmatch(value.strip())
    return _read(m) if m else None


def date_spans(text: str, date: Date) -> list[tuple[int, int]]:
    """Where `text` writes `date` (start, end), in digits or numerals: from the year when
    the date gives one, else from the month (a year before it is kept)."""
    if "月" not in text:
        return []
    spans = []
    for m in _DATE.finditer(text):
        said = _read(m)
        if said is None or (said.month, said.day) != (date.month, date.day):
            continue
        if date.year is not None and said.year != date.year:
            continue
        spans.append((m.start() if date.year is not None else m.start("m"), m.end()))
    return spans


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
    for m in _DATE.finditer(text):
        date = _read(m)
        if date is None:
            continue
        digits = f"{date.month}月{date.day}日"
        zh = f"{_numerals(date.month)}月{_numerals(date.day)}日"
        if date.year is not None:
            digits = f"{date.year}年{digits}"
            zh = "".join(_ZH_DIGITS[int(c)] for c in str(date.year)) + f"年{zh}"
        found += [s for s in (digits, zh) if s not in m.group()]
    return list(dict.fromkeys(found))
