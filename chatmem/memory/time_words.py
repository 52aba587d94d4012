"""Time words in a question, as the spans of time they name: `last May`, `三周前`, `去年`,
`8 May 2023`, `May 8, 2023`, `2023-05-08`, `early June`, `2023年5月`, `last Friday`, `上周五`,
`the day before yesterday`, `上上周五`, `大前天`, `二〇二二年五月`, `三月下旬`, `月底`,
`today`, `last night`, `昨晚`, `今早`, `去年底`, `the end of last year`.

A question that names a time ("Where did we eat last month?", "去年我看了哪个展？")
asks about what was said then; retrieval prefers messages dated within the
span. Read relative to `now` (the time of the newest earlier message: in a
replay the clock of the conversation, not of the machine). English and
Chinese (read in `time_words_zh`, traditional characters as simplified: 上個月, 上週五,
三月五號); numbers as digits or words, full-width digits and letters as the ASCII
ones; a day first or the month first, and a year when one is given (else the latest
such day or month not after `now`).
What is not understood names no span:
a question without time words is ranked as before.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import datetime
from functools import cache

from chatmem.lazy_patterns import lazy
from chatmem.memory import time_words_zh
from chatmem.memory.time_spans import (
    TimeSpan,
    ago,
    dated,
    day_of_month,
    days_back,
    last_month_named,
    month_span,
    months_back,
    named_month,
    part_of_month,
    part_of_named_month,
    part_of_year,
    past,
    this_week,
    this_weekend,
    week_of_month,
    week_of_named_month,
    weekday_span,
    weekend,
    weeks_back,
    year_span,
)
from chatmem.memory.time_words_zh import zh_number
from chatmem.text import FULL_WIDTH

__all__ = ["TimeSpan", "may_name_time", "read", "spans", "zh_number"]

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS.pop("may", None)
MONTHS["may"] = 5
EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
              "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
              "twelve": 12, "couple of": 2, "few": 3}
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
# A month is 30 days only where it is counted back from now (`the past two months`).
UNIT_DAYS = {"day": 1, "week": 7, "fortnight": 14, "month": 30}
EDGES = {"start": "early", "beginning": "early", "middle": "mid", "end": "late"}
NTH = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4,
       "last": None}

_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
DAY_PARTS = ("morning", "afternoon", "evening", "night")
_DAY_PARTS = "|".join(DAY_PARTS)
_EN_COUNT = "|".join(sorted(EN_NUMBERS, key=len, reverse=True))
_YEAR = r"(?:19|20)\d\d"
_WEEKDAY_NAMES = "|".join(WEEKDAYS)
_MONTH_NAMED = rf"(?P<{{0}}>{_MONTH_NAMES})\b\.?(?:,?\s+(?P<{{0}}_year>{_YEAR})\b)?"
_EN = lazy(
    rf"\b(?:(?P<ago_n>\d+|{_EN_COUNT})\s+(?P<ago_unit>day|week|fortnight|month)s?\s+ago"
    rf"|(?:the\s+)?(?:past|last|previous)\s+(?:(?P<past_n>\d+|{_EN_COUNT})\s+"
    rf"(?P<past_unit>day|week|month)s|(?P<past_fortnight>fortnight))\b"
    # last weekend, over the weekend, the weekend before last (the weekend alone: none)
    rf"|(?P<wkend>last|this|(?:over|at|on|during)\s+the|the)\s+weekend\b"
    rf"(?P<wkend_before>\s+before\s+last\b)?"
    rf"|(?:the\s+)?(?P<week_before_last>week\s+before\s+last)\b"
    # the first week of April, the last week of the month, the start/end of February
    rf"|(?:the\s+)?(?P<nth_week>first|second|third|fourth|last|1st|2nd|3rd|4th)\s+week\s+"
    rf"(?:of|in)\s+(?:{_MONTH_NAMED.format('nth_month')}|(?P<nth_rel>last|this|the)\s+month\b)"
    rf"|(?:the\s+)?(?P<edge>start|beginning|middle|end)\s+of\s+"
    rf"(?:{_MONTH_NAMED.format('edge_month')}|(?P<edge_rel>last|this|the)\s+month\b"
    rf"|(?P<edge_year>last|this)\s+year\b|(?P<edge_year_n>{_YEAR})\b)"
    rf"|(?P<wd_when>last|this|past|on)\s+(?P<weekday>{_WEEKDAY_NAMES})\b"
    # last year, this May, last night, this morning
    # (last Feb 29 is the latest 29 February, not all of last February)
    # (last May 2023, last March of 2024: the month of the year said, not this year's)
    rf"|(?P<last>last|this)\s+(?P<what>year|month|week|{_DAY_PARTS}"
    rf"|(?P<last_month>{_MONTH_NAMES})\b(?!\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b)"
    rf"(?:\.?,?\s+(?:of\s+)?(?P<last_year>{_YEAR})\b)?)\b"
    rf"|(?P<day_before>day\s+before\s+yesterday|night\s+before\s+last)"
    rf"|(?P<yesterday>yesterday)"
    rf"|(?P<today>to(?:day|night))"
    # 8 May 2023, on the 1st of February, 2023 (a day first, as most of the world writes it)
    rf"|(?:(?P<d_around>around|about|on)\s+)?(?:the\s+)?(?P<d_day>\d{{1,2}})(?:st|nd|rd|th)?"
    rf"\s+(?:of\s+)?(?P<d_month>{_MONTH_NAMES})\b\.?(?:,?\s+(?P<d_year>{_YEAR})\b)?"
    # on the 4th (of this month), but not on the 4th floor
    rf"|(?P<nth_when>on|around|about)\s+the\s+(?P<nth_day>\d{{1,2}})(?:st|nd|rd|th)\b"
    rf"(?P<nth_this>\s+of\s+th(?:is|e)\s+month\b)?(?!\s*[a-z0-9])"
    rf"|(?P<around>around|about|on)?\s*(?P<m_day_month>{_MONTH_NAMES})\.?\s+(?P<m_day>\d{{1,2}})"
    rf"(?:st|nd|rd|th)?\b(?:,?\s+(?P<m_year>{_YEAR})\b)?"
    rf"|(?:(?:in|during|back\s+in)\s+)?(?P<part>early|mid|late)[-\s]+(?:(?P<part_month>"
    rf"{_MONTH_NAMES})\b\.?(?:,?\s+(?P<part_year>{_YEAR})\b)?|(?P<part_only_year>{_YEAR})\b)"
    rf"|(?:(?:in|during|back\s+in)\s+)?(?P<y_month>{_MONTH_NAMES})\.?,?\s+(?P<y_year>{_YEAR})\b"
    rf"|(?:in|during|back\s+in)\s+(?P<in_month>{_MONTH_NAMES})\b"
    rf"|(?:in|during)\s+(?P<in_year>{_YEAR})\b)",
    re.IGNORECASE)
# The words of a time that are searched with the rest of a question: a month's or a
# weekday's name says that time in a message too ("in June", "每周五"), where a day's
# number, `ago` or `last` say nothing of it (the 4 of `May 4` is any list's item 4).
# `may` is left out: a message saying it is mostly saying the verb.
_NAMES = lazy(
    rf"\b(?:{'|'.join(sorted((m for m in MONTHS if m != 'may'), key=len, reverse=True))}"
    rf"|{_WEEKDAY_NAMES})\b|(?:周|星期|礼拜)[一二三四五六日天]|(?<![0-9一二三四五六七八九十])"
    r"(?:十[一二]?|[一二三四五六七八九])月", re.IGNORECASE)
# `last night`, `this morning` name a day only as an adverb ("what did I eat last night?",
# "this morning, I …"), not in a noun phrase: after a determiner or `at` (the last night of
# the trip, our last evening, at last night fell), before `of` or before a word that does
# not go on a clause (the last night bus, this morning routine). Not `that` or `her`: "what
# did I tell her about that last night?" is yesterday. A capitalised word may be a name.
_NOUN_PHRASE_BEFORE = frozenset(
    {"the", "a", "an", "my", "our", "your", "his", "their", "its", "one", "every", "each", "at"})
_CLAUSE_AFTER = frozenset({
    "i", "we", "you", "he", "she", "they", "it", "there", "me", "us", "him", "her", "them", "my",
    "our", "your", "his", "their", "this", "that", "these", "those", "at", "in", "on", "with",
    "about", "for", "from", "to", "by", "around", "near", "after", "before", "during", "until",
    "till", "over", "into", "through", "without", "like", "between", "since", "under", "outside",
    "inside", "downtown", "here", "home", "upstairs", "and", "or", "but", "so", "because", "when",
    "while", "as", "if", "though", "although", "than", "then", "once", "where", "who", "what",
    "which", "why", "how", "whom", "whose", "was", "were", "is", "are", "did", "do", "does", "had",
    "has", "have", "will", "would", "could", "should", "can", "might", "must", "not", "again",
    "too", "also", "already", "really", "just", "only", "still", "even", "ever", "actually",
    "exactly", "anyway", "alone", "together", "late", "early", "instead", "all", "both", "right",
    "please", "regarding", "concerning", "apart", "yet", "either", "specifically"})
# Up to or from that day: "before today", "until yesterday", 今天之前 name no single day.
_BOUND_BEFORE = frozenset({"before", "until", "till", "to", "after"})
_WORD_BEFORE = lazy(r"([a-z]+)\s+\Z", re.IGNORECASE)
_OF = lazy(rf"\s+of\s+(?:(?P<year>{_YEAR})\b|(?P<course>course)\b|\w)", re.IGNORECASE)
_WORD_AFTER = lazy(r"(?P<possessive>['’]s\b)|\s+(?P<word>[a-z]+)\b", re.IGNORECASE)
# 2023-05-08, 2023/5/8: no word boundary before it, as Chinese runs into digits.
_ISO = lazy(rf"(?<!\d)(?P<year>{_YEAR})([-/])(?P<month>\d{{1,2}})\2(?P<day>\d{{1,2}})(?!\d)")


@cache
def _compatible() -> dict[int, int]:
    from chatmem.chinese_variants import simplified  # read at the first non-ASCII text

    return {**FULL_WIDTH, **simplified()}


def _folded(text: str) -> str:
    """Full-width digits and letters as ASCII, traditional Chinese as simplified (the
    patterns are written in it): one character for one, so positions stay."""
    return text if text.isascii() else text.translate(_compatible())


def may_name_time(text: str) -> bool:
    """Whether `text` holds words that could name a time (before reading any message's)."""
    text = _folded(text)
    return any(pattern.search(text) is not None for pattern, _ in _readers(text))


_Reader = Callable[[re.Match[str], datetime], TimeSpan | None]


def _readers(folded: str) -> tuple[tuple[re.Pattern[str], _Reader], ...]:
    """The patterns that may find a time in `folded`, each with what reads its match:
    Chinese's only where `folded` holds a character past ASCII, as every way Chinese names
    a time holds one (年, 月, 周, 天...). Searched over an English question, that pattern
    took 0.08 ms of a turn's recall, more than English's own."""
    chinese = () if folded.isascii() else ((time_words_zh.PATTERN, time_words_zh.read),)
    return ((_EN, _english), *chinese, (_ISO, _iso))


def spans(text: str, now: datetime) -> list[TimeSpan]:
    """The spans of time `text` names, read at `now` (an aware datetime)."""
    return read(text, now)[0]


def read(text: str, now: datetime) -> tuple[list[TimeSpan], str]:
    """The spans of time `text` names, read at `now` (an aware datetime), and `text` with
    the words that named them blanked out: what is left to search by its words (the 4 of
    `May 4` or the day of `three days ago` matches any message saying 4 or day)."""
    folded = _folded(text)
    found = []
    named: list[tuple[int, int]] = []
    for pattern, reader in _readers(folded):
        for m in pattern.finditer(folded):
            try:
                span = reader(m, now)
            except (ValueError, OverflowError):
                # Beyond the calendar's years 1–9999 (a conversation dated at year 1, an
                # exporter's zero time, asked about "last May"): no time is named.
                continue
            if span is not None:
                found.append(span)
                named.append(m.span())
    if not named:
        return found, text
    # Folding keeps positions (one character for one), so the folded text's spans blank
    # the text's. A space, not nothing, where words were: Chinese on either side would
    # otherwise join into a bigram never said. Two patterns may read overlapping words.
    blank = [False] * len(text)
    for start, end in named:
        blank[start:end] = [True] * (end - start)
        for name in _NAMES.finditer(folded, start, end):
            blank[name.start():name.end()] = [False] * (name.end() - name.start())
    return found, "".join(" " if out else c for c, out in zip(text, blank, strict=True))


def _iso(m: re.Match[str], now: datetime) -> TimeSpan | None:
    return dated(int(m["month"]), int(m["day"]), now, around=False, year=int(m["year"]))


def _count(text: str) -> int:
    return int(text) if text.isdigit() else EN_NUMBERS[text]


def _english(m: re.Match[str], now: datetime) -> TimeSpan | None:
    groups = {k: (re.sub(r"\s+", " ", v.lower()) if v else v) for k, v in m.groupdict().items()}
    if groups["ago_n"]:
        count = _count(groups["ago_n"])
        if groups["ago_unit"] == "month":
            return months_back(count, now)
        return ago(count, UNIT_DAYS[groups["ago_unit"]], now)
    if groups["past_n"]:
        return past(_count(groups["past_n"]), UNIT_DAYS[groups["past_unit"]], now)
    if groups["past_fortnight"]:
        return past(1, UNIT_DAYS["fortnight"], now)
    if groups["wkend"]:
        return _weekend(groups["wkend"], bool(groups["wkend_before"]), now)
    if groups["week_before_last"]:
        return weeks_back(2, now)
    if groups["nth_week"]:
        nth = NTH[groups["nth_week"]]
        if groups["nth_month"]:
            return week_of_named_month(MONTHS[groups["nth_month"]],
                                       _year_of(groups["nth_month_year"]), nth, now)
        week = week_of_month(_month(groups, "nth", now), nth)
        return week if week.start <= now else None  # this month's, still to come
    if groups["edge_year"]:
        return part_of_year(now.year - (groups["edge_year"] == "last"), EDGES[groups["edge"]],
                            now)
    if groups["edge_year_n"]:
        return part_of_year(int(groups["edge_year_n"]), EDGES[groups["edge"]], now)
    if groups["edge"]:
        if groups["edge_month"]:
            return part_of_named_month(MONTHS[groups["edge_month"]],
                                       _year_of(groups["edge_month_year"]),
                                       EDGES[groups["edge"]], now)
        return part_of_month(_month(groups, "edge", now), EDGES[groups["edge"]], now)
    if groups["weekday"]:
        weekday = WEEKDAYS[groups["weekday"]]
        if groups["wd_when"] == "this":
            # This week's, as 这周五: said of only once it has come (asked on a Wednesday,
            # "this Friday" is two days on, not the Friday gone).
            return weekday_span(weekday, now, weeks_before=0) \
                if weekday <= now.weekday() else None
        return weekday_span(weekday, now, before_today=groups["wd_when"] == "last")
    if groups["last"]:
        this, what = groups["last"] == "this", groups["what"]
        if what in ("year", "month", "week") and (of := _OF.match(m.string, m.end())):
            # "the last week of the trip", "the last year of school" name no date (but
            # "last month of course" is last month); "the last month of 2025" is its December.
            if of["year"] and not this and what != "year":
                december = month_span(int(of["year"]), 12, now)
                found = december if what == "month" else week_of_month(december, None)
                return found if found.start <= now else None
            if not of["course"]:
                return None
        if what == "year":
            return year_span(now.year if this else now.year - 1, now)
        if what == "month":
            return months_back(0 if this else 1, now)
        if what == "week":
            return this_week(now) if this else weeks_back(1, now)
        if what in DAY_PARTS:
            return days_back(0 if this else 1, now) if _as_adverb(m) else None
        month = MONTHS[groups["last_month"]]
        if groups["last_year"]:
            return named_month(month, int(groups["last_year"]), now)
        return last_month_named(month, now, before=not this)
    if groups["day_before"]:
        return days_back(2, now)
    if groups["yesterday"] or groups["today"]:
        if _word_before(m) in _BOUND_BEFORE:
            return None
        return days_back(1 if groups["yesterday"] else 0, now)
    if groups["d_month"]:
        return dated(MONTHS[groups["d_month"]], int(groups["d_day"]), now,
                     around=groups["d_around"] in ("around", "about"),
                     year=_year_of(groups["d_year"]))
    if groups["nth_day"]:
        if groups["nth_this"] and int(groups["nth_day"]) > now.day:
            return None  # later this month: nothing said then yet
        return day_of_month(int(groups["nth_day"]), now, around=groups["nth_when"] != "on")
    if groups["m_day_month"]:
        return dated(MONTHS[groups["m_day_month"]], int(groups["m_day"]), now,
                     around=groups["around"] in ("around", "about"),
                     year=_year_of(groups["m_year"]))
    if groups["part_only_year"]:
        return part_of_year(int(groups["part_only_year"]), groups["part"], now)
    if groups["part"]:
        return part_of_named_month(MONTHS[groups["part_month"]], _year_of(groups["part_year"]),
                                   groups["part"], now)
    if groups["y_month"]:
        return named_month(MONTHS[groups["y_month"]], int(groups["y_year"]), now)
    if groups["in_month"]:
        return last_month_named(MONTHS[groups["in_month"]], now, before=False)
    if groups["in_year"]:
        return year_span(int(groups["in_year"]), now)
    return None


def _word_before(m: re.Match[str]) -> str | None:
    before = _WORD_BEFORE.search(m.string, max(0, m.start() - 16), m.start())
    return before[1].lower() if before else None


def _as_adverb(m: re.Match[str]) -> bool:
    """Whether `last night`, `this morning` (`m`) says when, not which night (see
    `_NOUN_PHRASE_BEFORE`)."""
    after = _WORD_AFTER.match(m.string, m.end(), m.end() + 24)
    if after is not None and after["possessive"]:
        return True  # last night's dinner, at this morning's meeting
    before = _word_before(m)
    if before in _NOUN_PHRASE_BEFORE or before in _BOUND_BEFORE:
        return False
    word = after["word"] if after else None
    return word is None or word[0].isupper() or word.lower() in _CLAUSE_AFTER


def _weekend(said: str, before_last: bool, now: datetime) -> TimeSpan | None:
    """`last weekend` is the latest one that is over (asked on a Sunday: the one before);
    `over the weekend` the latest that has begun; `the weekend` alone (what is planned for
    the weekend?) names none."""
    if before_last:
        return weekend(now, over=True, back=1)
    if said == "last":
        return weekend(now, over=True)
    if said == "this":
        return this_weekend(now)
    return None if said == "the" else weekend(now)


def _month(groups: dict[str, str | None], name: str, now: datetime) -> TimeSpan:
    """The month `<name>_month` names (`February`, `May 2023`), or `last/this/the month`."""
    said = groups[f"{name}_month"]
    if said:
        return named_month(MONTHS[said], _year_of(groups[f"{name}_month_year"]), now)
    return months_back(1 if groups[f"{name}_rel"] == "last" else 0, now)


def _year_of(text: str | None) -> int | None:
    return int(text) if text else None
