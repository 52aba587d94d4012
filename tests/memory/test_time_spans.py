"""Calendar spans (weeks, weekends, the past few days, a day of the month) and the invariants
the time words that name them keep at any time of any day."""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from chatmem.memory.time_spans import (
    TimeSpan,
    day_of_month,
    day_start,
    month_span,
    past,
    week_of_month,
    weekend,
    weeks_back,
)
from chatmem.memory.time_words import spans

MOMENTS = st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)).map(
    lambda moment: moment.replace(tzinfo=UTC))
DAY = timedelta(days=1)

# Time words naming a time before now: each span they name ends after it starts and not
# after now.
PAST_WORDS = ["last weekend", "over the weekend", "this weekend", "the weekend before last",
              "last week", "the week before last", "a fortnight ago", "the past two weeks",
              "the last few days", "the past fortnight", "two weeks ago",
              "上周末", "上个周末", "上上个周末", "这个周末", "周末我做了什么", "上周", "上上周",
              "前两周", "最近三个月", "这几天", "过去的三天"]


@given(MOMENTS, st.integers(1, 4))
def test_a_week_back_is_a_calendar_week_before_this_one(now: datetime, count: int) -> None:
    span = weeks_back(count, now)
    assert span.start.weekday() == 0 and span.end - span.start == 7 * DAY
    this_monday = day_start(now) - now.weekday() * DAY
    assert span.end == this_monday - 7 * (count - 1) * DAY <= now


def test_last_week_asked_on_a_monday_is_the_seven_days_just_gone() -> None:
    # It was 7 to 14 days back, give or take: Thursday to Sunday just gone were left out.
    monday = datetime(2025, 3, 24, 9, tzinfo=UTC)
    assert weeks_back(1, monday) == TimeSpan(datetime(2025, 3, 17, tzinfo=UTC),
                                             datetime(2025, 3, 24, tzinfo=UTC))
    assert weeks_back(1, monday).holds(datetime(2025, 3, 20, 18, tzinfo=UTC))


@given(MOMENTS, st.integers(0, 3))
def test_a_weekend_is_the_latest_saturday_and_sunday_over_or_begun(now: datetime,
                                                                   back: int) -> None:
    over, begun = weekend(now, over=True, back=back), weekend(now, back=back)
    for span in (over, begun):
        assert span.start.weekday() == 5 and span.start < span.end <= now
        assert span.end == min(span.start + 2 * DAY, now)
    # Nothing later fits: the next weekend after `over` is not over, after `begun` not begun.
    assert over.end == over.start + 2 * DAY
    assert over.start + (7 * (back + 1) + 2) * DAY > now
    assert begun.start + 7 * (back + 1) * DAY >= now
    # Asked on a weekend day, "last weekend" is the one before this one.
    if now.weekday() >= 5 and now > day_start(now) - (now.weekday() - 5) * DAY:
        assert over.start == begun.start - 7 * DAY


@given(MOMENTS, st.integers(1, 12), st.sampled_from([1, 7, 14, 30]))
def test_the_past_few_days_run_until_now(now: datetime, count: int, unit: int) -> None:
    span = past(count, unit, now)
    assert span.end == now and span.start == day_start(now) - count * unit * DAY


@given(MOMENTS, st.integers(1, 31))
def test_a_day_of_the_month_is_the_latest_such_day_not_after_today(now: datetime,
                                                                   day: int) -> None:
    span = day_of_month(day, now, around=False)
    assert span is not None and span.start.day == day and span.end - span.start == DAY
    assert span.start <= now
    # No later day of that number has begun: every day from it to today has another.
    assert all((span.start + n * DAY).day != day
               for n in range(1, (day_start(now) - span.start).days + 1))


@given(MOMENTS, st.sampled_from(["What did I do on Feb 29?", "on 29 February", "2月29日我在哪？",
                                  "2月29号左右", "around the 29th of February",
                                  "What did we do last Feb 29?", "last February 29th"]))
def test_a_leap_day_without_a_year_is_the_latest_29_february_not_after_now(
        now: datetime, words: str) -> None:
    # Asked in a year without one, it named nothing (this year's or last year's was tried);
    # "last Feb 29" named all of the last February.
    [span] = spans(words, now)
    leap_day = span.start + 3 * DAY if span.end - span.start > DAY else span.start
    assert (leap_day.month, leap_day.day) == (2, 29) and leap_day <= now
    assert not any(calendar.isleap(year) and datetime(year, 2, 29, tzinfo=UTC) <= now
                   for year in range(leap_day.year + 1, now.year + 1))


def test_a_day_no_year_has_names_none_and_a_leap_day_of_a_written_year_only_that_one() -> None:
    now = datetime(2026, 3, 11, 10, tzinfo=UTC)
    assert spans("Feb 30", now) == spans("2月30日", now) == []
    assert spans("February 29, 2023", now) == []
    assert [span.days for span in spans("February 29, 2024", now)] == [("2024-02-29",) * 2]


@given(MOMENTS)
def test_a_years_end_is_its_december_once_it_has_come_and_its_start_january(
        now: datetime) -> None:
    for words in ("今年底", "今年年末", "年底", "the end of this year"):
        found = spans(words, now)
        assert [span.days for span in found] == (
            [(f"{now.year}-12-01", f"{now.year}-12-31")] if now.month == 12 else []), words
    for words in ("去年底", "去年年末", f"{now.year - 1}年底", "the end of last year"):
        assert [span.days for span in spans(words, now)] == [
            (f"{now.year - 1}-12-01", f"{now.year - 1}-12-31")], words
    for words in ("今年初", "年初", "the start of this year", "the beginning of this year"):
        assert [span.days for span in spans(words, now)] == [
            (f"{now.year}-01-01", f"{now.year}-01-31")], words


@given(MOMENTS)
def test_a_written_years_end_and_start_are_its_december_and_january(now: datetime) -> None:
    # "the end of 2024", "late 2024" named nothing where 2024年底 named its December.
    year = now.year - 2
    for words in (f"the end of {year}", f"end of {year}", f"late {year}", f"in late {year}",
                  f"{year}年底"):
        assert [span.days for span in spans(words, now)] == [
            (f"{year}-12-01", f"{year}-12-31")], words
    for words in (f"the start of {year}", f"early {year}", f"{year}年初"):
        assert [span.days for span in spans(words, now)] == [
            (f"{year}-01-01", f"{year}-01-31")], words
    assert spans(f"late {now.year + 1}", now) == spans(f"{now.year + 1}年底", now) == []


PARTS = {"early": ("the start of {month}", "{n}月初", "{n}月上旬"),
         "mid": ("mid-{month}", "{n}月中旬"),
         "late": ("the end of {month}", "late {month}", "{n}月底", "{n}月下旬")}
FIRST_DAY = {"early": 1, "mid": 11, "late": 21}


@given(MOMENTS, st.integers(1, 12), st.sampled_from(sorted(PARTS)))
def test_a_part_of_a_month_without_a_year_is_the_latest_that_has_begun(
        now: datetime, month: int, part: str) -> None:
    # Asked on 3 December, "the end of December" named the 21st to the 31st, days to come.
    first = now.replace(month=month, day=FIRST_DAY[part], hour=0, minute=0, second=0,
                        microsecond=0)
    if first > now:
        first = first.replace(year=now.year - 1)
    for words in PARTS[part]:
        [span] = spans(words.format(month=calendar.month_name[month], n=month), now)
        assert span.start == first <= now, words
        assert span.end == (first + 10 * DAY if part != "late" else
                            month_span(first.year, month, now).end), words


@given(MOMENTS)
def test_this_months_part_names_none_until_it_has_begun(now: datetime) -> None:
    this_month = month_span(now.year, now.month, now)
    late = TimeSpan(this_month.start + 20 * DAY, this_month.end)
    for words in ("月底", "到月底还要交什么？", "这个月底", "本月下旬", "the end of this month",
                  "the end of the month"):
        assert spans(words, now) == ([late] if now.day >= 21 else []), words
    assert spans("月初", now) == spans("the start of this month", now) == [
        TimeSpan(this_month.start, this_month.start + 10 * DAY)]


def test_weeks_of_a_month_are_its_days_seven_at_a_time_and_its_last_seven() -> None:
    february = month_span(2024, 2, datetime(2024, 6, 1, tzinfo=UTC))
    assert week_of_month(february, 1).days == ("2024-02-01", "2024-02-07")
    assert week_of_month(february, 4).days == ("2024-02-22", "2024-02-28")
    assert week_of_month(february, None).days == ("2024-02-23", "2024-02-29")


@given(MOMENTS, st.sampled_from(PAST_WORDS))
def test_time_words_of_the_past_end_after_they_start_and_not_after_now(
        now: datetime, words: str) -> None:
    named = spans(words, now)
    assert len(named) <= 1
    for span in named:
        assert span.start < span.end <= now, words
