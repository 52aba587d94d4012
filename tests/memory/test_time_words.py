"""Time words in a question (English and Chinese) and recall's preference for that time."""

from __future__ import annotations

import calendar
import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from asked import asked_after
from cli_runner import invoke
from fact_conversations import context_with
from growth import assert_linear
from hypothesis import given
from hypothesis import strategies as st

from chatmem.memory.time_words import may_name_time, read, spans, zh_number

NOW = datetime(2026, 6, 1, 9, 44, tzinfo=UTC)


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize("question, start, end", [
    ("Where did we eat last December?", "2025-12-01", "2026-01-01"),
    ("What did I read in January?", "2026-01-01", "2026-02-01"),
    ("What happened last month?", "2026-05-01", "2026-06-01"),
    ("Who did I meet last year?", "2025-01-01", "2026-01-01"),
    ("What did I buy around March 30?", "2026-03-27", "2026-04-03"),
    ("Which film did we see on March 3rd?", "2026-03-03", "2026-03-04"),
    ("Where was I three weeks ago?", "2026-05-07", "2026-05-15"),
    ("What did I cook yesterday?", "2026-05-31", "2026-06-01"),
    ("去年十二月份我出去吃了什么？", "2025-12-01", "2026-01-01"),
    ("去年我去了哪里？", "2025-01-01", "2026-01-01"),
    ("上个月我看了什么剧？", "2026-05-01", "2026-06-01"),
    ("三月份我在忙什么？", "2026-03-01", "2026-04-01"),
    ("2月4号左右我去了哪？", "2026-02-01", "2026-02-08"),
    ("三个星期前我做了什么？", "2026-05-07", "2026-05-15"),
    ("两周前我见了谁？", "2026-05-14", "2026-05-22"),
    ("昨天吃了什么？", "2026-05-31", "2026-06-01"),
    # A day first, as most of the world writes it; a year, when given, is that year.
    ("What did we eat on 8 February 2026?", "2026-02-08", "2026-02-09"),
    ("Where was I on the 1st of February, 2025?", "2025-02-01", "2025-02-02"),
    ("What did I buy on 3 May?", "2026-05-03", "2026-05-04"),
    ("What did I read on March 3, 2024?", "2024-03-03", "2024-03-04"),
    ("What happened in May 2021?", "2021-05-01", "2021-06-01"),
    ("Where did we go June 2025?", "2025-06-01", "2025-07-01"),
    ("Who did I see in early April?", "2026-04-01", "2026-04-11"),
    ("What did I do in mid-March 2025?", "2025-03-11", "2025-03-21"),
    ("What broke in late February 2024?", "2024-02-21", "2024-03-01"),
    ("What happened on 2025-12-24?", "2025-12-24", "2025-12-25"),
    ("我2024/7/5做了什么？", "2024-07-05", "2024-07-06"),
    ("2024年5月我在哪？", "2024-05-01", "2024-06-01"),
    ("2023年5月8日发生了什么？", "2023-05-08", "2023-05-09"),
    ("2022年我去了哪里？", "2022-01-01", "2023-01-01"),
    # NOW is a Monday: "last Monday" is a week ago, "on Sunday" yesterday.
    ("What did I eat last Friday?", "2026-05-29", "2026-05-30"),
    ("What did I do last Monday?", "2026-05-25", "2026-05-26"),
    ("Who called on Sunday?", "2026-05-31", "2026-06-01"),
    ("上周五我们吃了什么？", "2026-05-29", "2026-05-30"),
    ("星期三我做了什么？", "2026-05-27", "2026-05-28"),
    ("周日去哪了？", "2026-05-31", "2026-06-01"),
    # One 上 more is one week or month further back; 大前天 is a day before 前天.
    ("上上周五我们吃了什么？", "2026-05-22", "2026-05-23"),
    ("上上个星期六去哪了？", "2026-05-23", "2026-05-24"),
    ("上上周我见了谁？", "2026-05-18", "2026-05-25"),
    ("上上个月我看了什么剧？", "2026-04-01", "2026-05-01"),
    ("上上上个月我在忙什么？", "2026-03-01", "2026-04-01"),
    ("大前天吃了什么？", "2026-05-29", "2026-05-30"),
    ("大前年我去了哪里？", "2023-01-01", "2024-01-01"),
    ("What did I cook the day before yesterday?", "2026-05-30", "2026-05-31"),
    # A year in Chinese numerals, digit by digit.
    ("二〇二二年五月我在哪？", "2022-05-01", "2022-06-01"),
    ("二零二二年我去了哪里？", "2022-01-01", "2023-01-01"),
    ("一九九九年十二月发生了什么？", "1999-12-01", "2000-01-01"),
    # The part of a month, as early/mid/late: days 1–10, 11–20, 21 to the end.
    ("五月初我见了谁？", "2026-05-01", "2026-05-11"),
    ("四月上旬我在哪？", "2026-04-01", "2026-04-11"),
    ("三月中旬我做了什么？", "2026-03-11", "2026-03-21"),
    ("三月下旬我做了什么？", "2026-03-21", "2026-04-01"),
    ("二月底我买了什么？", "2026-02-21", "2026-03-01"),
    ("2025年12月末我在哪？", "2025-12-21", "2026-01-01"),
    ("上个月底我们去了哪？", "2026-05-21", "2026-06-01"),
    ("去年五月初我在哪？", "2025-05-01", "2025-05-11"),
    ("月初我说过什么？", "2026-06-01", "2026-06-11"),
    # A leap day after `last` is the latest 29 February (it was all of last February); a
    # year's end or start written with its number is its December or January.
    ("What did we do last Feb 29?", "2024-02-29", "2024-03-01"),
    # A year said after `last <month>` is that month's year (it was this year's month).
    ("What did we do last May 2023?", "2023-05-01", "2023-06-01"),
    ("Where were we last March, 2024?", "2024-03-01", "2024-04-01"),
    ("What did we ship at the end of 2024?", "2024-12-01", "2025-01-01"),
    ("What broke in late 2024?", "2024-12-01", "2025-01-01"),
    ("Who did I meet in early 2025?", "2025-01-01", "2025-02-01"),
    ("Where were we at the end of December?", "2025-12-21", "2026-01-01"),
    ("What did we do at the end of May?", "2026-05-21", "2026-06-01"),
    # Full-width digits and letters, as input methods type them.
    ("３月４号我去了哪？", "2026-03-04", "2026-03-05"),
    ("２０２３年我去了哪里？", "2023-01-01", "2024-01-01"),
    ("What did I read in Ｍａｒｃｈ ２０２５?", "2025-03-01", "2025-04-01"),
    # A weekend is Saturday and Sunday ("last weekend" was read as "last week"); a week
    # before last and a part of a month said in words.
    ("What did I get up to last weekend?", "2026-05-30", "2026-06-01"),
    ("What did we do over the weekend?", "2026-05-30", "2026-06-01"),
    ("How was this weekend?", "2026-05-30", "2026-06-01"),
    ("Where did we go the weekend before last?", "2026-05-23", "2026-05-25"),
    ("What happened last week?", "2026-05-25", "2026-06-01"),
    ("Who did I see the week before last?", "2026-05-18", "2026-05-25"),
    ("What did I buy a fortnight ago?", "2026-05-10", "2026-05-25"),
    ("What did I read in the past two weeks?", "2026-05-18", "2026-06-01"),
    ("What did we decide at the start of February?", "2026-02-01", "2026-02-11"),
    ("What happened at the beginning of the month?", "2026-06-01", "2026-06-11"),
    ("Where was I at the end of last month?", "2026-05-21", "2026-06-01"),
    ("What did I do in the middle of March 2025?", "2025-03-11", "2025-03-21"),
    ("Where was I the first week of April?", "2026-04-01", "2026-04-08"),
    ("What broke in the last week of February?", "2026-02-22", "2026-03-01"),
    ("What happened on the 4th?", "2026-05-04", "2026-05-05"),
    ("Who called around the 20th?", "2026-05-17", "2026-05-24"),
    ("What did I do on the 1st of this month?", "2026-06-01", "2026-06-02"),
    # The day's words for a part of it are that day (they named none).
    ("昨晚吃了什么？", "2026-05-31", "2026-06-01"),
    ("昨日说过什么？", "2026-05-31", "2026-06-01"),
    ("前晚我在哪？", "2026-05-30", "2026-05-31"),
    ("今早我说了什么？", "2026-06-01", "2026-06-02"),
    ("今天我做了什么？", "2026-06-01", "2026-06-02"),
    ("What did I do today?", "2026-06-01", "2026-06-02"),
    ("Where did we eat last night?", "2026-05-31", "2026-06-01"),
    ("What did I say this morning?", "2026-06-01", "2026-06-02"),
    # A year's end is its last month (it was all of the year), its start its first.
    ("去年底我们去了哪？", "2025-12-01", "2026-01-01"),
    ("去年年底买了什么？", "2025-12-01", "2026-01-01"),
    ("前年年初我在哪？", "2024-01-01", "2024-02-01"),
    ("2024年底发生了什么？", "2024-12-01", "2025-01-01"),
    ("年初我定了什么目标？", "2026-01-01", "2026-02-01"),
    ("What did we do at the end of last year?", "2025-12-01", "2026-01-01"),
])
def test_time_words_name_the_span_they_mean(question: str, start: str, end: str) -> None:
    [span] = spans(question, NOW)
    assert (span.start.date(), span.end.date()) == (day(start).date(), day(end).date())


@pytest.mark.parametrize("question", [
    "May I ask what my sister does?", "What is my phone number now?", "我在准备哪项资格认证？",
    "Which book had me hooked most recently?", "我最近迷上了什么？",
    "What happened on February 30, 2023?", "Top 5 things to pack?", "Is 2.1.3 the version?",
    "What is on the 4th floor?", "What should we plan for the weekend?",
    "What is due on the 20th of this month?",
])
def test_a_question_without_a_time_names_no_span(question: str) -> None:
    assert spans(question, NOW) == []


@given(st.integers(1, 12), st.sampled_from(["day", "week", "天", "周", "个星期"]),
       st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)))
def test_a_span_ago_holds_that_moment_and_ends_before_it_is_now(
        count: int, unit: str, now: datetime) -> None:
    now = now.replace(tzinfo=UTC)
    days = {"day": 1, "week": 7, "天": 1, "周": 7, "个星期": 7}[unit]
    text = f"{count} {unit}s ago" if unit.isascii() else f"{count}{unit}前"
    [span] = spans(text, now)
    assert span.start < span.end <= now
    assert span.holds(now - timedelta(days=count * days))


@given(st.integers(1, 12), st.datetimes(min_value=datetime(2001, 1, 1),
                                        max_value=datetime(2090, 1, 1)))
def test_a_named_month_is_the_latest_one_not_after_now(month: int, now: datetime) -> None:
    now = now.replace(tzinfo=UTC)
    for text in (f"in {datetime(2000, month, 1):%B}", f"{month}月份"):
        [span] = spans(text, now)
        assert span.start.month == month and span.start <= now
        assert span.start.year in (now.year, now.year - 1)
        assert (span.start.year == now.year) == (month <= now.month)


@given(st.dates(min_value=date(1990, 1, 1), max_value=date(2089, 12, 31)),
       st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)))
def test_a_date_written_with_its_year_names_that_day_at_any_time(
        day_named: date, now: datetime) -> None:
    now = now.replace(tzinfo=UTC)
    month = f"{day_named:%B}"
    for text in (f"What did I do on {day_named.day} {month} {day_named.year}?",
                 f"on the {day_named.day}th of {month}, {day_named.year}",
                 f"What happened {month} {day_named.day}, {day_named.year}?",
                 f"on {day_named.isoformat()}",
                 f"{day_named.year}年{day_named.month}月{day_named.day}日我做了什么？"):
        [span] = spans(text, now)
        assert (span.start.date(), span.end.date()) == (day_named,
                                                        day_named + timedelta(days=1)), text


@given(st.sampled_from(list(calendar.day_name)),
       st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)))
def test_last_weekday_is_that_day_in_the_week_before_today(name: str, now: datetime) -> None:
    now = now.replace(tzinfo=UTC)
    [span] = spans(f"What did I do last {name}?", now)
    assert span.end - span.start == timedelta(days=1)
    assert f"{span.start:%A}" == name
    assert now.date() - timedelta(days=7) <= span.start.date() < now.date()


@given(st.sampled_from(range(7)),
       st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)))
def test_this_weekday_is_this_weeks_once_it_has_come_as_in_chinese(weekday: int,
                                                                   now: datetime) -> None:
    # Asked on Wednesday 11 March, "this Friday" named Friday 6 March (last week's) and
    # boosted what was said then; 这周五 names no day until Friday has come.
    now = now.replace(tzinfo=UTC)
    name = calendar.day_name[weekday]
    found = spans(f"What is happening this {name}?", now)
    assert found == spans(f"这周{'一二三四五六日'[weekday]}有什么安排？", now)
    monday = now.date() - timedelta(days=now.weekday())
    if weekday > now.weekday():
        assert found == []
    else:
        assert [span.days for span in found] == [
            ((monday + timedelta(days=weekday)).isoformat(),) * 2]
    # "on Friday" is still the latest Friday not after today, "next Friday" none.
    [on] = spans(f"What did I do on {name}?", now)
    assert f"{on.start:%A}" == name and now.date() - timedelta(days=6) <= on.start.date() \
        <= now.date()
    assert spans(f"What is planned for next {name}?", now) == []


@pytest.mark.parametrize("question, day", [
    ("What is happening this Friday?", None),  # asked on Wednesday 11 March 2026
    ("What did we settle this Monday?", "2026-03-09"),
    ("Who came by this Wednesday?", "2026-03-11"),
    ("What did I eat last Friday?", "2026-03-06"),
    ("Who called on Friday?", "2026-03-06"),
    ("What is on next Friday?", None),
])
def test_weekday_words_asked_midweek(question: str, day: str | None) -> None:
    assert [span.days for span in spans(question, datetime(2026, 3, 11, 10, tzinfo=UTC))] \
        == ([(day, day)] if day else [])


@pytest.mark.parametrize("time_word, span, look_alike, look_alike_span", [
    ("上上周五", ("2026-05-22", "2026-05-23"), "上上下下都找遍了", None),
    # 楼上 (upstairs) + 上个月; 爱上 (fell for) + 上个月.
    ("上上个月", ("2026-04-01", "2026-05-01"), "楼上上个月搬走了", ("2026-05-01", "2026-06-01")),
    ("上上个月", ("2026-04-01", "2026-05-01"), "我爱上上个月认识的人",
     ("2026-05-01", "2026-06-01")),
    # 老大 (the eldest) + 前天.
    ("大前天", ("2026-05-29", "2026-05-30"), "老大前天来过", ("2026-05-30", "2026-05-31")),
    # 初中 is junior high school, not early in a month; 初五 a day of the lunar calendar.
    ("五月初", ("2026-05-01", "2026-05-11"), "我初中的时候喜欢谁？", None),
    ("上个月初", ("2026-05-01", "2026-05-11"), "上个月初中同学聚会了",
     ("2026-05-01", "2026-06-01")),
    ("五月初", ("2026-05-01", "2026-05-11"), "五月初五吃粽子", None),
    # 底薪 is base pay, not the end of a month.
    ("上个月底", ("2026-05-21", "2026-06-01"), "上个月底薪涨了", ("2026-05-01", "2026-06-01")),
    # 月底 alone is this month's (none until it has come); next month's, every month's or
    # a lunar month's is not.
    ("上个月底", ("2026-05-21", "2026-06-01"), "下个月底有什么安排？", None),
    ("上个月底", ("2026-05-21", "2026-06-01"), "每月底要交房租", None),
    ("月初", ("2026-06-01", "2026-06-11"), "正月初一去哪拜年？", None),
    # 如今 (nowadays) + 天气, 至今 + 早已; 之前 + 晚了 (later than before), 提前 + 晚点.
    ("今天", ("2026-06-01", "2026-06-02"), "如今天气变暖了", None),
    ("今早", ("2026-06-01", "2026-06-02"), "至今早已忘了", None),
    ("前晚", ("2026-05-30", "2026-05-31"), "比之前晚了半小时", None),
    ("前晚", ("2026-05-30", "2026-05-31"), "提前晚点出发", None),
    # 底薪 (base pay) and 初中 (junior high) after 去年: last year, not its end or start.
    ("去年底", ("2025-12-01", "2026-01-01"), "去年底薪涨了吗？", ("2025-01-01", "2026-01-01")),
    ("去年初", ("2025-01-01", "2025-02-01"), "去年初中同学聚会了", ("2025-01-01", "2026-01-01")),
    # A day part in a noun phrase names no day: after a determiner or `at`, before `of`
    # or a noun (they named yesterday or today and took the words out of the search).
    ("last night", ("2026-05-31", "2026-06-01"),
     "What did we plan for the last night of our Kyoto trip?", None),
    ("last night", ("2026-05-31", "2026-06-01"), "When was the last night bus?", None),
    ("last night", ("2026-05-31", "2026-06-01"), "At last night fell", None),
    ("last night", ("2026-05-31", "2026-06-01"), "Our last night in Rome?", None),
    ("last evening", ("2026-05-31", "2026-06-01"), "the last evening of the conference", None),
    ("this morning", ("2026-06-01", "2026-06-02"), "What is my this morning routine?", None),
    ("this morning", ("2026-06-01", "2026-06-02"), "this morning shift starts late", None),
    # Up to or from a day is no single day.
    ("today", ("2026-06-01", "2026-06-02"), "What did I say before today?", None),
    ("today", ("2026-06-01", "2026-06-02"), "What did we do the day before today?", None),
    ("yesterday", ("2026-05-31", "2026-06-01"), "Until yesterday I thought so", None),
    ("last night", ("2026-05-31", "2026-06-01"), "What did I say before last night?", None),
    ("今天", ("2026-06-01", "2026-06-02"), "我今天之前说过什么？", None),
    ("今天", ("2026-06-01", "2026-06-02"), "到今天为止我说了什么？", None),
    ("昨天", ("2026-05-31", "2026-06-01"), "昨天以前的事还记得吗？", None),
    ("前天", ("2026-05-30", "2026-05-31"), "前天之后发生了什么？", None),
])
def test_words_that_only_look_like_time_words_name_their_own_span_or_none(
        time_word: str, span: tuple[str, str], look_alike: str,
        look_alike_span: tuple[str, str] | None) -> None:
    assert [(s.start.date().isoformat(), s.end.date().isoformat())
            for s in spans(time_word, NOW)] == [span]
    assert [(s.start.date().isoformat(), s.end.date().isoformat())
            for s in spans(look_alike, NOW)] == ([look_alike_span] if look_alike_span else [])


@given(st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)))
def test_each_shang_goes_one_week_or_month_further_back(now: datetime) -> None:
    now = now.replace(tzinfo=UTC)
    [friday], [before_last] = spans("上周五", now), spans("上上周五", now)
    assert before_last.start == friday.start - timedelta(days=7) and f"{before_last.start:%A}" \
        == "Friday"
    [last_month], [month_before] = spans("上个月", now), spans("上上个月", now)
    assert month_before.end == last_month.start and month_before.start.day == 1
    [day_before], [three_back] = spans("前天", now), spans("大前天", now)
    assert three_back.end == day_before.start


@given(st.dates(min_value=date(1990, 1, 1), max_value=date(2089, 12, 31)),
       st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)))
def test_full_width_digits_name_the_day_ascii_ones_do(day_named: date, now: datetime) -> None:
    now = now.replace(tzinfo=UTC)
    written = f"{day_named.year}年{day_named.month}月{day_named.day}号我做了什么？"
    full_width = written.translate({ord(d): ord(d) + 0xFEE0 for d in "0123456789"})
    assert full_width != written and spans(full_width, now) == spans(written, now) != []


@given(st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)))
def test_a_part_of_a_day_is_that_day_in_either_language(now: datetime) -> None:
    now = now.replace(tzinfo=UTC)
    [today] = spans("today", now)
    assert today.start <= now < today.end and today.end - today.start == timedelta(days=1)
    for words in ("今天", "今日", "今早", "今晚", "tonight", "this evening"):
        assert spans(words, now) == [today], words
    for words in ("昨晚", "昨日", "昨夜", "last night"):
        assert spans(words, now) == spans("yesterday", now), words
    assert spans("前晚", now) == spans("前天", now) == spans("the night before last", now)


@pytest.mark.parametrize("question, day", [
    ("what did I eat last night?", "2026-05-31"),
    ("Last night I cooked what?", "2026-05-31"),
    ("This morning, what did I say?", "2026-06-01"),
    ("Anything this evening?", "2026-06-01"),
    ("What did I tell her about that last night?", "2026-05-31"),
    ("What did we settle at last night's dinner?", "2026-05-31"),
    ("Who spoke at this morning’s meeting?", "2026-06-01"),
    ("Last night Anna called about what?", "2026-05-31"),
    ("What did we eat last night at the station?", "2026-05-31"),
    ("last night 我们吃了什么", "2026-05-31"),
])
def test_a_day_part_said_as_when_names_its_day(question: str, day: str) -> None:
    assert [span.days for span in spans(question, NOW)] == [(day, day)]


@given(st.sampled_from(["the", "our", "my", "a", "at"]),
       st.sampled_from(["last", "this"]),
       st.sampled_from(["morning", "afternoon", "evening", "night"]),
       st.sampled_from(["bus", "train", "flight", "shift", "routine", "of the trip", "was long",
                        "", "?"]),
       st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)))
def test_a_day_part_in_a_noun_phrase_names_no_day_and_stays_searched(
        before: str, which: str, part: str, after: str, now: datetime) -> None:
    question = f"What did we plan for {before} {which} {part} {after}".rstrip()
    found, words = read(question, now.replace(tzinfo=UTC))
    assert found == [] and words == question
    # Said as when, the same words name that day (and leave the search).
    as_when = f"What did we plan {which} {part} {after}".rstrip()
    if after in ("", "?", "was long"):
        [span] = spans(as_when, now.replace(tzinfo=UTC))
        assert span == spans("yesterday" if which == "last" else "today",
                             now.replace(tzinfo=UTC))[0]
    else:
        assert spans(as_when, now.replace(tzinfo=UTC)) == []


@given(st.sampled_from(["first", "second", "third", "fourth", "last"]),
       st.sampled_from(["December", "January", "June", "this month", "the month", "last month"]),
       st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)))
def test_a_week_of_a_month_is_one_that_has_begun(nth: str, month: str, now: datetime) -> None:
    # Asked on 6 December, "the last week of December" is last year's: nothing was said
    # in this year's yet (it named 25 December to 1 January to come).
    now = now.replace(tzinfo=UTC)
    for span in spans(f"What did we do the {nth} week of {month}?", now):
        assert span.start <= now
        assert (span.end - span.start).days <= 7


def test_the_last_week_of_december_asked_early_in_december_is_last_years() -> None:
    asked = datetime(2026, 12, 6, 12, tzinfo=UTC)
    [span] = spans("What did we do the last week of December?", asked)
    assert span.days == ("2025-12-25", "2025-12-31")
    assert spans("What did we do the last week of December 2026?", asked) == []
    assert [span.days for span in spans("十二月最后一周我们做了什么？", asked)] == \
        [("2025-12-25", "2025-12-31")]
    assert [span.days for span in spans("十二月第二周我在哪？", asked)] == \
        [("2025-12-08", "2025-12-14")]
    assert spans("2026年12月最后一周我们做了什么？", asked) == []


@pytest.mark.parametrize("question", [
    "How was the last week of the trip?",
    "What did we see in the last week of our holiday?",
    "What did I study in the last year of school?",
    "Which song played in the last month of the tour?",
])
def test_last_week_of_something_names_no_date(question: str) -> None:
    # "last week of the trip" is the trip's, not the week before this one.
    assert spans(question, NOW) == []


def test_last_month_of_course_is_last_month_and_of_a_year_is_its_end() -> None:
    asked = datetime(2026, 12, 6, 12, tzinfo=UTC)
    assert [s.days for s in spans("I paid the rent last month of course", asked)] == \
        [("2026-11-01", "2026-11-30")]
    assert [s.days for s in spans("We went last year of course", asked)] == \
        [("2025-01-01", "2025-12-31")]
    assert [s.days for s in spans("What broke in the last month of 2025?", asked)] == \
        [("2025-12-01", "2025-12-31")]
    assert [s.days for s in spans("What did I do the last week of 2025?", asked)] == \
        [("2025-12-25", "2025-12-31")]
    assert spans("What did I do the last week of 2026?", asked) == []  # still to come


def test_zhou_yi_qi_is_a_week_not_a_monday() -> None:
    # 上周一起 is "last week, together": the week, not last week's Monday.
    assert spans("上周一起吃饭了吗？", NOW) == spans("上周", NOW)
    assert spans("这周一直很忙", NOW) == spans("这周", NOW)


def test_chinese_numbers_read_as_numbers() -> None:
    assert [zh_number(t) for t in ("三", "两", "十", "十二", "二十", "12", "百")] == [
        3, 2, 10, 12, 20, 12, None]
    assert may_name_time("上个月") and may_name_time("last May") and not may_name_time("你好")


PLACES = ["Supra", "Ichiran", "Xampanyet", "Chilli Garden", "Beit Zaytoun"]
ZH_PLACES = ["海底捞", "烤全羊", "潮汕牛肉", "日料放题", "北京烤鸭"]


def dated_dinners(engine, places: list[str], said: str, filler: str) -> None:
    """A dinner out in each month from January to May 2026, among chatter, then June."""
    lines = []
    for month, place in enumerate(places, 1):
        for step in range(6):
            at = datetime(2026, month, 10 + step, 19, tzinfo=UTC).isoformat()
            text = said.format(place=place) if step == 2 else filler.format(n=step + month * 10)
            lines += [{"role": "user", "content": text, "ts": at},
                      {"role": "assistant", "content": "OK.", "ts": at}]
    for n in range(3):
        at = datetime(2026, 6, 1, 9, n, tzinfo=UTC).isoformat()
        lines += [{"role": "user", "content": filler.format(n=n), "ts": at},
                  {"role": "assistant", "content": "OK.", "ts": at}]
    engine.store.history.import_messages(engine.session.id, lines)
    asked_after(engine.store, engine.session.id)


@pytest.mark.parametrize("said, filler, question, places, expected", [
    ("We had dinner at {place}.", "Note {n}: nothing much happened.",
     "Where did we eat out in March?", PLACES, "Xampanyet"),
    ("我们在{place}聚餐。", "随便记一下：第{n}条。", "三月份我出去吃了什么？", ZH_PLACES,
     "潮汕牛肉"),
    ("We had dinner at {place}.", "Note {n}: nothing much happened.",
     "Where did we eat out two months ago?", PLACES, "Chilli Garden"),
    ("We had dinner at {place}.", "Note {n}: nothing much happened.",
     "Where did we eat out on 12 February 2026?", PLACES, "Ichiran"),
])
def test_recall_prefers_messages_from_the_time_the_question_names(
        make_engine, said: str, filler: str, question: str, places: list[str],
        expected: str) -> None:
    engine = make_engine("retrieval", mode="bm25")
    dated_dinners(engine, places, said, filler)
    context = context_with(engine, "retrieval", question, mode="bm25", max_tokens=400)
    recalled = [] if context.part("recalled") is None else [
        m.content for m in context.part("recalled").messages]
    assert any(expected in text for text in recalled)
    assert not any(p in text for text in recalled for p in places if p != expected)
    # The recall reason names the days it read in the question (inspect shows them).
    reason = context.part("recalled").reason
    [(first, last)] = reason.times_named
    [span] = spans(question, datetime(2026, 6, 1, 9, 2, tzinfo=UTC))
    assert (first, last) == (span.start.date().isoformat(),
                             (span.end - timedelta(days=1)).date().isoformat())
    assert reason.by_time >= 1
    # With no weight for time words, nothing in the question matches any message.
    plain = context_with(engine, "retrieval", question, mode="bm25", max_tokens=400,
                         time_weight=0)
    assert plain.part("recalled") is None


EVENTS = {"2026-02-03": "We settled on repainting the shopfront.",
          "2026-05-04": "Signed the lease for the studio.",
          "2026-05-20": "Finished the quarterly review.",
          "2026-05-23": "Spent the day at the allotment.",
          "2026-05-30": "Went kayaking on the Wye."}


@pytest.mark.parametrize("question, expected", [
    ("What did I get up to last weekend?", ["2026-05-30"]),
    ("上个周末我干了什么？", ["2026-05-30"]),
    ("And the weekend before last?", ["2026-05-23"]),
    ("上上个周末呢？", ["2026-05-23"]),
    ("What did we decide at the start of February?", ["2026-02-03"]),
    ("What happened on the 4th?", ["2026-05-04"]),
    ("4号那天怎么样？", ["2026-05-04"]),
    ("Anything the week before last?", ["2026-05-20", "2026-05-23"]),
])
def test_recall_by_words_alone_brings_the_day_a_weekend_or_week_names(
        make_engine, question: str, expected: list[str]) -> None:
    """A note a day since late January, asked on Monday 1 June: no word of the question is
    in the message it asks about, so only the time it names can bring it (before, these
    named none, or "last weekend" the week before last)."""
    engine = make_engine("retrieval", mode="bm25")
    lines, on = [], date(2026, 1, 26)
    while on <= date(2026, 6, 1):
        at = datetime(on.year, on.month, on.day, 19 if on.day != 1 else 9, tzinfo=UTC)
        said = EVENTS.get(on.isoformat(), f"Note {on:%d %b}: nothing much.")
        lines += [{"role": "user", "content": said, "ts": at.isoformat()},
                  {"role": "assistant", "content": "OK.", "ts": at.isoformat()}]
        on += timedelta(days=1)
    engine.store.history.import_messages(engine.session.id, lines)
    asked_after(engine.store, engine.session.id)
    # Room for ten days' notes, each day's below the line naming it (9 tokens a day).
    context = context_with(engine, "retrieval", question, mode="bm25", max_tokens=450)
    recalled = [m.content for m in context.part("recalled").messages]
    assert [e for e in EVENTS.values() if e in recalled] == [EVENTS[on] for on in expected]


EDGE_QUESTIONS = ["what did I say last May?", "去年说了什么", "上个月", "in March",
                  "three weeks ago", "last Friday", "early June", "this year", "今年", "下周五",
                  "next year",
                  "two months ago", "on 2024-05-08", "last week", "yesterday", "三天前"]


@given(question=st.sampled_from(EDGE_QUESTIONS),
       now=st.sampled_from([datetime(1, 1, 1, tzinfo=UTC), datetime(1, 3, 2, tzinfo=UTC),
                            datetime(9999, 12, 31, 23, tzinfo=UTC),
                            datetime(9999, 12, 1, tzinfo=UTC)]))
def test_a_time_beyond_the_calendar_names_no_span_and_raises_nothing(
        question: str, now: datetime) -> None:
    # A conversation dated at an exporter's zero time (0001-01-01) or at 9999: the spans that
    # would fall outside years 1–9999 are left out; those inside are kept.
    for span in spans(question, now):
        assert span.start <= span.end


def test_recall_of_the_friday_before_last_brings_that_fridays_message_first(
        tmp_path: Path) -> None:
    """As `chatmem inspect --next` shows it, asked today: 广州 was said on the Friday before
    last, 深圳 last Friday, 今天在家 early today (the user's zone is UTC here)."""
    today = datetime.now(UTC).date()
    monday = today - timedelta(days=today.weekday())
    before_last, last = monday - timedelta(days=10), monday - timedelta(days=3)
    transcript = tmp_path / "时间.jsonl"
    said = [("那天我在广州。", f"{before_last}T10:00:00+08:00"),
            ("那天我在深圳。", f"{last}T10:00:00+08:00"), ("今天在家。", f"{today}T00:00:00+00:00")]
    lines: list[dict[str, object]] = [{"chatmem": 1}]
    for n, (text, at) in enumerate(said, 1):
        lines += [{"role": "user", "content": text, "id": f"u{n}", "ts": at},
                  {"role": "assistant", "content": "好的。", "id": f"a{n}", "ts": at}]
    transcript.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                          encoding="utf-8")
    db = str(tmp_path / "t.db")
    invoke("sessions", "import", str(transcript), "时间", "--no-index", "--db", db, code=0)
    # Room for one message below the line naming its day and its reply, not for
    # another day's message below a line of its own.
    shown = invoke("inspect", "时间", "--next", "上上周五我在哪？", "--strategy",
                   "retrieval:mode=bm25,max_tokens=45,recent=0", "--provider", "scripted",
                   "--json", "--db", db, code=0)
    context = json.loads(shown.stdout)["context"]
    recall = sorted(context["recall"], key=lambda row: -row["fused"])
    assert recall[0]["text"] == "那天我在广州。" and recall[0]["kept"]
    assert [row["text"] for row in recall if row["kept"]] == ["那天我在广州。", "好的。"]
    assert context["tokens"] <= 45
    named = f"the input names {before_last.day} {before_last:%b %Y}"
    assert any(named in part["reason"] for part in context["parts"])


def test_time_words_are_read_in_time_that_grows_with_the_length_not_its_square() -> None:
    """A question of 30,000 digits (or 上上上…, 下下下…) made the Chinese pattern try every
    start of the run: a minute per turn, and a server stalled meanwhile. 4× the text is compared
    (linear 4, quadratic 16), so a busy machine slows both sides alike."""
    def read(text: str) -> None:
        may_name_time(text)
        spans(text, NOW)

    for unit in ("11", "三三", "上上", "下下", "大大", "1-"):
        assert_linear(read, lambda n, unit=unit: unit * n, 2_000, unit)
