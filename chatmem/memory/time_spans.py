"""Spans of calendar time, as the time words of a question name them (see `time_words`):
a day, a week or weekend, a month or part of one, a year, the past few days or weeks until
now, or a moment give or take some days."""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class TimeSpan:
    """From `start` (included) to `end` (excluded)."""

    start: datetime
    end: datetime

    def holds(self, moment: datetime) -> bool:
        return self.start <= moment < self.end

    @property
    def days(self) -> tuple[str, str]:
        """Its first and last day, ISO (`2023-05-08`), as a recall reason keeps them (a span
        until now, `the past two weeks`, ends on today)."""
        last = self.end - timedelta(microseconds=1)
        return self.start.date().isoformat(), last.date().isoformat()


def day_start(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def days_back(count: int, now: datetime) -> TimeSpan:
    """The whole day `count` days before today."""
    start = day_start(now) - timedelta(days=count)
    return TimeSpan(start, start + timedelta(days=1))


def month_span(year: int, month: int, now: datetime) -> TimeSpan:
    start = now.replace(year=year, month=month, day=1, hour=0, minute=0, second=0,
                        microsecond=0)
    end = start.replace(year=year + (month == 12), month=month % 12 + 1)
    return TimeSpan(start, end)


def months_back(count: int, now: datetime) -> TimeSpan:
    """The calendar month `count` months before this one (0: this month)."""
    back = (now.year * 12 + now.month - 1) - count
    return month_span(back // 12, back % 12 + 1, now)


def last_month_named(month: int, now: datetime, *, before: bool) -> TimeSpan:
    """The latest `month` not after now (`before`: strictly before the current one)."""
    year = now.year if month < now.month or (month == now.month and not before) \
        else now.year - 1
    return month_span(year, month, now)


def named_month(month: int, year: int | None, now: datetime) -> TimeSpan:
    """`May 2023`, or without a year the latest May not after now."""
    return month_span(year, month, now) if year else last_month_named(month, now, before=False)


def part_of_month(span: TimeSpan, part: str, now: datetime) -> TimeSpan | None:
    """The early (1st–10th), mid (11th–20th) or late (21st–end) days of a month; none while
    they are to come (asked on the 3rd, 月底 or "the end of this month" is weeks away: nothing
    said then yet, and its words are better searched, as a year's end still to come)."""
    tenth = timedelta(days=10)
    if part == "early":
        found = TimeSpan(span.start, span.start + tenth)
    elif part == "mid":
        found = TimeSpan(span.start + tenth, span.start + 2 * tenth)
    else:
        found = TimeSpan(span.start + 2 * tenth, span.end)
    return found if found.start <= now else None


def part_of_named_month(month: int, year: int | None, part: str,
                        now: datetime) -> TimeSpan | None:
    """`late December`, `十二月底`: of `year`, or without one the latest that has begun, as
    a day without a year is the latest not after now (asked on 3 December, last year's
    21st–31st: this year's are days to come)."""
    found = part_of_month(named_month(month, year, now), part, now)
    if found is None and year is None:
        found = part_of_month(month_span(now.year - 1, month, now), part, now)
    return found


def week_of_named_month(month: int, year: int | None, nth: int | None,
                        now: datetime) -> TimeSpan | None:
    """`the last week of December`: of `year`, or without one the latest that has begun
    (asked on 6 December, last year's: this year's is weeks away); none while it is to come."""
    found = week_of_month(named_month(month, year, now), nth)
    if found.start > now and year is None:
        found = week_of_month(month_span(now.year - 1, month, now), nth)
    return found if found.start <= now else None


def part_of_year(year: int, part: str, now: datetime) -> TimeSpan | None:
    """The start (early: January) or end (late: December) of a year, or the whole year
    (mid). 年底 and "the end of the year" are said of the weeks before New Year, seldom of
    autumn: its last month, not its last third as a month's end is; none while it is to
    come (asked in March, 今年底 is months away: nothing said of it yet)."""
    if part == "mid":
        return year_span(year, now)
    span = month_span(year, 1 if part == "early" else 12, now)
    return span if span.start <= now else None


def ago(count: int, unit_days: int, now: datetime) -> TimeSpan:
    """`count` units before now, give or take half a unit (a day at least)."""
    centre = now - timedelta(days=count * unit_days)
    slack = timedelta(days=max(1.0, unit_days / 2 + 0.5))
    return TimeSpan(centre - slack, centre + slack)


def weeks_back(count: int, now: datetime) -> TimeSpan:
    """`last week` (1), `the week before last` (2): that calendar week, Monday to Sunday.
    (It was 7 to 14 days back, give or take: asked on a Monday, "last week" then left out
    the Thursday to Sunday just gone and took in the Monday to Wednesday a week before.)"""
    monday = day_start(now) - timedelta(days=day_start(now).weekday() + 7 * count)
    return TimeSpan(monday, monday + timedelta(days=7))


def past(count: int, unit_days: int, now: datetime) -> TimeSpan:
    """`the past two weeks`, `前两周`: from the start of the day `count` units back until now."""
    return TimeSpan(day_start(now) - timedelta(days=count * unit_days), now)


def weekend(now: datetime, *, back: int = 0, over: bool = False) -> TimeSpan:
    """The latest Saturday and Sunday that are over (`over`), else the latest that have
    begun (asked on a Sunday: this one, until now); `back` weekends before that."""
    today = day_start(now)
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)
    if saturday >= now or (over and saturday + timedelta(days=2) > now):
        saturday -= timedelta(days=7)
    saturday -= timedelta(days=7 * back)
    return TimeSpan(saturday, min(saturday + timedelta(days=2), now))


def this_weekend(now: datetime) -> TimeSpan | None:
    """On a weekend, this one; early in the week, the one just gone (people say "this
    weekend" of it on a Monday); from Wednesday on, the coming one, of which nothing has
    been said yet: no span."""
    return weekend(now) if now.weekday() in (5, 6, 0, 1) else None


def week_of_month(span: TimeSpan, nth: int | None) -> TimeSpan:
    """The `nth` week (days 1–7, 8–14, …) of a month, or its last seven days (None)."""
    if nth is None:
        return TimeSpan(span.end - timedelta(days=7), span.end)
    start = span.start + timedelta(days=7 * (nth - 1))
    return TimeSpan(start, min(start + timedelta(days=7), span.end))


def day_of_month(day: int, now: datetime, *, around: bool) -> TimeSpan | None:
    """`on the 4th`: the latest 4th not after today (this month's or an earlier month's;
    a 31st skips the months without one)."""
    if not 1 <= day <= 31:
        return None
    for back in range(12):
        month = months_back(back, now).start
        if day <= calendar.monthrange(month.year, month.month)[1] and \
                (back or day <= now.day):
            return dated(month.month, day, now, around=around, year=month.year)
    return None


def this_week(now: datetime) -> TimeSpan:
    return TimeSpan(day_start(now) - timedelta(days=7), now)


def dated(month: int, day: int, now: datetime, *, around: bool,
          year: int | None = None) -> TimeSpan | None:
    """A day (`around`: give or take three days); without a `year`, the latest such day
    not after now (a 29 February asked in 2026, 2024's)."""
    written = year is not None
    if year is None:
        year = now.year if (month, day) <= (now.month, now.day) else now.year - 1
    moment = None
    # A 29 February comes back within eight years (2096, then 2104); a day no year has
    # (30 February) is tried as often and names none.
    for back in range(1 if written else 9):
        try:
            moment = now.replace(year=year - back, month=month, day=day)
            break
        except ValueError:
            continue
    if moment is None:
        return None
    if around:
        return TimeSpan(day_start(moment) - timedelta(days=3),
                        day_start(moment) + timedelta(days=4))
    return TimeSpan(day_start(moment), day_start(moment) + timedelta(days=1))


def weekday_span(weekday: int, now: datetime, *, before_today: bool = False,
                 weeks_before: int | None = None) -> TimeSpan:
    """The latest `weekday` (0: Monday) on or before today (`before_today`: before it), or
    that day of the week `weeks_before` weeks before this one (weeks start on Monday)."""
    today = day_start(now)
    if weeks_before is not None:
        day = today - timedelta(days=today.weekday() + 7 * weeks_before - weekday)
    else:
        day = today - timedelta(days=(today.weekday() - weekday) % 7)
        if before_today and day == today:
            day -= timedelta(days=7)
    return TimeSpan(day, day + timedelta(days=1))


def year_span(year: int, now: datetime) -> TimeSpan:
    return TimeSpan(now.replace(year=year, month=1, day=1, hour=0, minute=0, second=0,
                                microsecond=0),
                    now.replace(year=year + 1, month=1, day=1, hour=0, minute=0, second=0,
                                microsecond=0))
