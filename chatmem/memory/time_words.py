"""Time words in a question, as the spans of time they name: `last May`, `三周前`, `去年`,
`8 May 2023`, `May 8, 2023`, `2023-05-08`, `early June`, `2023年5月`, `last Friday`, `上周五`.

A question that names a time ("Where did we eat last month?", "去年我看了哪个展？")
asks about what was said then; retrieval prefers messages dated within the
span. Read relative to `now` (the time of the newest earlier message: in a
replay the clock of the conversation, not of the machine). English and
Chinese; numbers as digits or words; a day first or the month first, and a
year when one is given (else the latest such day or month not after `now`).
What is not understood names no span:
a question without time words is ranked as before.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS.pop("may", None)
MONTHS["may"] = 5
EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
              "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
              "twelve": 12, "couple of": 2, "few": 3}
ZH_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
             "九": 9, "十": 10}
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
UNIT_DAYS = {"day": 1, "week": 7, "天": 1, "日": 1, "周": 7, "星期": 7, "礼拜": 7}


@dataclass(frozen=True)
class TimeSpan:
    """From `start` (included) to `end` (excluded)."""

    start: datetime
    end: datetime

    def holds(self, moment: datetime) -> bool:
        return self.start <= moment < self.end

    @property
    def days(self) -> tuple[str, str]:
        """Its first and last day, ISO (`2023-05-08`), as a recall reason keeps them."""
        return self.start.date().isoformat(), (self.end - timedelta(days=1)).date().isoformat()


def zh_number(text: str) -> int | None:
    """十二, 两, 3, 二十: a small number in Chinese numerals or digits."""
    if text.isdigit():
        return int(text)
    if not text or any(c not in ZH_DIGITS for c in text):
        return None
    if "十" not in text:
        return ZH_DIGITS[text] if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    return (ZH_DIGITS.get(tens, 0) if tens else 1) * 10 + (ZH_DIGITS.get(ones, 0) if ones else 0)


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month(year: int, month: int, now: datetime) -> TimeSpan:
    start = now.replace(year=year, month=month, day=1, hour=0, minute=0, second=0,
                        microsecond=0)
    end = start.replace(year=year + (month == 12), month=month % 12 + 1)
    return TimeSpan(start, end)


def _last_month_named(month: int, now: datetime, *, before: bool) -> TimeSpan:
    """The latest `month` not after now (`before`: strictly before the current one)."""
    year = now.year if month < now.month or (month == now.month and not before) \
        else now.year - 1
    return _month(year, month, now)


def _ago(count: int, unit_days: int, now: datetime) -> TimeSpan:
    """`count` units before now, give or take half a unit (a day at least)."""
    centre = now - timedelta(days=count * unit_days)
    slack = timedelta(days=max(1.0, unit_days / 2 + 0.5))
    return TimeSpan(centre - slack, centre + slack)


def _near(day: datetime) -> TimeSpan:
    return TimeSpan(_day(day) - timedelta(days=3), _day(day) + timedelta(days=4))


def _dated(month: int, day: int, now: datetime, *, around: bool,
           year: int | None = None) -> TimeSpan | None:
    """A day (`around`: give or take three days); without a `year`, the latest such day
    not after now."""
    if year is None:
        year = now.year if (month, day) <= (now.month, now.day) else now.year - 1
    try:
        moment = now.replace(year=year, month=month, day=day)
    except ValueError:
        return None
    return _near(moment) if around else TimeSpan(_day(moment),
                                                 _day(moment) + timedelta(days=1))


def _named_month(month: int, year: int | None, now: datetime) -> TimeSpan:
    """`May 2023`, or without a year the latest May not after now."""
    return _month(year, month, now) if year else _last_month_named(month, now, before=False)


def _part_of(span: TimeSpan, part: str) -> TimeSpan:
    """The early (1st–10th), mid (11th–20th) or late (21st–end) days of a month."""
    tenth = timedelta(days=10)
    if part == "early":
        return TimeSpan(span.start, span.start + tenth)
    if part == "mid":
        return TimeSpan(span.start + tenth, span.start + 2 * tenth)
    return TimeSpan(span.start + 2 * tenth, span.end)


def _weekday(weekday: int, now: datetime, *, before_today: bool = False,
             weeks_back: int | None = None) -> TimeSpan:
    """The latest `weekday` (0: Monday) on or before today (`before_today`: before it), or
    that day of the week `weeks_back` weeks before this one (weeks start on Monday)."""
    today = _day(now)
    if weeks_back is not None:
        day = today - timedelta(days=today.weekday() + 7 * weeks_back - weekday)
    else:
        day = today - timedelta(days=(today.weekday() - weekday) % 7)
        if before_today and day == today:
            day -= timedelta(days=7)
    return TimeSpan(day, day + timedelta(days=1))


def _year(year: int, now: datetime) -> TimeSpan:
    return TimeSpan(now.replace(year=year, month=1, day=1, hour=0, minute=0, second=0,
                                microsecond=0),
                    now.replace(year=year + 1, month=1, day=1, hour=0, minute=0, second=0,
                                microsecond=0))


_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
_EN_COUNT = "|".join(sorted(EN_NUMBERS, key=len, reverse=True))
_YEAR = r"(?:19|20)\d\d"
_WEEKDAY_NAMES = "|".join(WEEKDAYS)
_EN = re.compile(
    rf"\b(?:(?P<ago_n>\d+|{_EN_COUNT})\s+(?P<ago_unit>day|week|month)s?\s+ago"
    rf"|(?P<wd_when>last|this|past|on)\s+(?P<weekday>{_WEEKDAY_NAMES})\b"
    rf"|(?P<last>last|this)\s+(?P<what>year|month|week|{_MONTH_NAMES})"
    rf"|(?P<yesterday>yesterday)"
    # 8 May 2023, on the 1st of February, 2023 (a day first, as most of the world writes it)
    rf"|(?:(?P<d_around>around|about|on)\s+)?(?:the\s+)?(?P<d_day>\d{{1,2}})(?:st|nd|rd|th)?"
    rf"\s+(?:of\s+)?(?P<d_month>{_MONTH_NAMES})\b\.?(?:,?\s+(?P<d_year>{_YEAR})\b)?"
    rf"|(?P<around>around|about|on)?\s*(?P<m_day_month>{_MONTH_NAMES})\.?\s+(?P<m_day>\d{{1,2}})"
    rf"(?:st|nd|rd|th)?\b(?:,?\s+(?P<m_year>{_YEAR})\b)?"
    rf"|(?:(?:in|during|back\s+in)\s+)?(?P<part>early|mid|late)[-\s]+(?P<part_month>{_MONTH_NAMES})"
    rf"\b\.?(?:,?\s+(?P<part_year>{_YEAR})\b)?"
    rf"|(?:(?:in|during|back\s+in)\s+)?(?P<y_month>{_MONTH_NAMES})\.?,?\s+(?P<y_year>{_YEAR})\b"
    rf"|(?:in|during|back\s+in)\s+(?P<in_month>{_MONTH_NAMES})\b"
    rf"|(?:in|during)\s+(?P<in_year>{_YEAR})\b)",
    re.IGNORECASE)
# 2023-05-08, 2023/5/8: no word boundary before it, as Chinese runs into digits.
_ISO = re.compile(rf"(?<!\d)(?P<year>{_YEAR})([-/])(?P<month>\d{{1,2}})\2(?P<day>\d{{1,2}})(?!\d)")
_ZH_NUM = r"[0-9一二两三四五六七八九十]+"
_ZH = re.compile(
    # 星期五, 上周五; 周一 only where it is not 周 + 一起/一直 (all week, together)
    rf"(?P<zh_wd_last>上个?)?(?:星期|礼拜|周(?!一[起直样下些点切定般共]))(?P<zh_wd>[一二三四五六日天])"
    rf"|(?P<ago_n>{_ZH_NUM}|几)\s*(?:个)?(?P<ago_unit>天|日|周|星期|礼拜|月)(?:之)?前"
    rf"|(?P<rel_year>去年|今年|前年)(?:(?P<rel_year_month>{_ZH_NUM})月)?"
    rf"|(?P<rel_month>上个月|上月|这个月|本月)"
    rf"|(?P<rel_week>上周|上个星期|上星期|上个礼拜|这周|本周)"
    rf"|(?P<rel_day>昨天|前天)"
    rf"|(?:(?P<year>{_YEAR})\s*年\s*)?(?P<month>{_ZH_NUM})月(?:份)?(?:(?P<day>{_ZH_NUM})[日号])?"
    rf"(?P<around>左右|前后)?"
    rf"|(?P<only_year>{_YEAR})\s*年")


def may_name_time(text: str) -> bool:
    """Whether `text` holds words that could name a time (before reading any message's)."""
    return any(pattern.search(text) is not None for pattern in (_EN, _ZH, _ISO))


def spans(text: str, now: datetime) -> list[TimeSpan]:
    """The spans of time `text` names, read at `now` (an aware datetime)."""
    readers = ((_EN, _english), (_ZH, _chinese), (_ISO, _iso))
    found = []
    for pattern, read in readers:
        for m in pattern.finditer(text):
            try:
                span = read(m, now)
            except (ValueError, OverflowError):
                # Beyond the calendar's years 1–9999 (a conversation dated at year 1, an
                # exporter's zero time, asked about "last May"): no time is named.
                continue
            if span is not None:
                found.append(span)
    return found


def _iso(m: re.Match[str], now: datetime) -> TimeSpan | None:
    return _dated(int(m["month"]), int(m["day"]), now, around=False, year=int(m["year"]))


def _english(m: re.Match[str], now: datetime) -> TimeSpan | None:
    groups = {k: (v.lower() if v else v) for k, v in m.groupdict().items()}
    if groups["ago_n"]:
        count = int(groups["ago_n"]) if groups["ago_n"].isdigit() else \
            EN_NUMBERS[groups["ago_n"]]
        if groups["ago_unit"] == "month":
            back = (now.year * 12 + now.month - 1) - count
            return _month(back // 12, back % 12 + 1, now)
        return _ago(count, UNIT_DAYS[groups["ago_unit"]], now)
    if groups["weekday"]:
        return _weekday(WEEKDAYS[groups["weekday"]], now,
                        before_today=groups["wd_when"] == "last")
    if groups["last"]:
        this, what = groups["last"] == "this", groups["what"]
        if what == "year":
            return _year(now.year if this else now.year - 1, now)
        if what == "month":
            back = (now.year * 12 + now.month - 1) - (0 if this else 1)
            return _month(back // 12, back % 12 + 1, now)
        if what == "week":
            return TimeSpan(_day(now) - timedelta(days=7), now) if this else \
                TimeSpan(_day(now) - timedelta(days=14), _day(now) - timedelta(days=5))
        return _last_month_named(MONTHS[what], now, before=not this)
    if groups["yesterday"]:
        return TimeSpan(_day(now) - timedelta(days=1), _day(now))
    if groups["d_month"]:
        return _dated(MONTHS[groups["d_month"]], int(groups["d_day"]), now,
                      around=groups["d_around"] in ("around", "about"),
                      year=_year_of(groups["d_year"]))
    if groups["m_day_month"]:
        return _dated(MONTHS[groups["m_day_month"]], int(groups["m_day"]), now,
                      around=groups["around"] in ("around", "about"),
                      year=_year_of(groups["m_year"]))
    if groups["part"]:
        month = _named_month(MONTHS[groups["part_month"]], _year_of(groups["part_year"]), now)
        return _part_of(month, groups["part"])
    if groups["y_month"]:
        return _named_month(MONTHS[groups["y_month"]], int(groups["y_year"]), now)
    if groups["in_month"]:
        return _last_month_named(MONTHS[groups["in_month"]], now, before=False)
    if groups["in_year"]:
        return _year(int(groups["in_year"]), now)
    return None


def _year_of(text: str | None) -> int | None:
    return int(text) if text else None


def _chinese(m: re.Match[str], now: datetime) -> TimeSpan | None:
    g = m.groupdict()
    if g["zh_wd"]:
        return _weekday(ZH_WEEKDAYS[g["zh_wd"]], now, weeks_back=1 if g["zh_wd_last"] else None)
    if g["ago_n"]:
        count = 3 if g["ago_n"] == "几" else zh_number(g["ago_n"])
        if count is None:
            return None
        if g["ago_unit"] == "月":
            back = (now.year * 12 + now.month - 1) - count
            return _month(back // 12, back % 12 + 1, now)
        return _ago(count, UNIT_DAYS[g["ago_unit"]], now)
    if g["rel_year"]:
        year = now.year - {"去年": 1, "今年": 0, "前年": 2}[g["rel_year"]]
        if g["rel_year_month"]:
            month = zh_number(g["rel_year_month"])
            return _month(year, month, now) if month and 1 <= month <= 12 else None
        return _year(year, now)
    if g["rel_month"]:
        back = (now.year * 12 + now.month - 1) - (1 if g["rel_month"].startswith("上") else 0)
        return _month(back // 12, back % 12 + 1, now)
    if g["rel_week"]:
        if g["rel_week"].startswith("上"):
            return TimeSpan(_day(now) - timedelta(days=14), _day(now) - timedelta(days=5))
        return TimeSpan(_day(now) - timedelta(days=7), now)
    if g["rel_day"]:
        back = 1 if g["rel_day"] == "昨天" else 2
        return TimeSpan(_day(now) - timedelta(days=back), _day(now) - timedelta(days=back - 1))
    if g["month"]:
        month = zh_number(g["month"])
        if month is None or not 1 <= month <= 12:
            return None
        if g["day"]:
            day = zh_number(g["day"])
            return None if day is None else _dated(month, day, now, around=bool(g["around"]),
                                                   year=_year_of(g["year"]))
        return _named_month(month, _year_of(g["year"]), now)
    if g["only_year"]:
        return _year(int(g["only_year"]), now)
    return None
