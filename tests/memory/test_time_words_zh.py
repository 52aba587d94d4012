"""Chinese time words of weekends, the past few days or weeks, a week of a month and a day
of this month, and the look-alikes that name no such span."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmem.memory.time_words import spans

NOW = datetime(2026, 6, 1, 9, 44, tzinfo=UTC)  # a Monday


def named(text: str) -> list[tuple[str, str]]:
    """First and last day of each span `text` names, ISO."""
    return [span.days for span in spans(text, NOW)]


@pytest.mark.parametrize("question, first, last", [
    # 上(个)周末 is the weekend just gone (asked on a Monday); one 上 more, the one before.
    ("上个周末我去哪了？", "2026-05-30", "2026-05-31"),
    ("上周末吃了什么？", "2026-05-30", "2026-05-31"),
    ("上上个周末我见了谁？", "2026-05-23", "2026-05-24"),
    ("这个周末过得怎么样？", "2026-05-30", "2026-05-31"),
    ("周末我做了什么？", "2026-05-30", "2026-05-31"),
    # 上上周 is the calendar week before last, Monday to Sunday.
    ("上上周我见了谁？", "2026-05-18", "2026-05-24"),
    # 前两周, 最近三天, 这几天: from that many days or weeks back until now.
    ("前两周我在忙什么？", "2026-05-18", "2026-06-01"),
    ("我前两周去了哪？", "2026-05-18", "2026-06-01"),
    ("最近三天吃了什么？", "2026-05-29", "2026-06-01"),
    ("这几天我在忙什么？", "2026-05-29", "2026-06-01"),
    ("过去的两个月我读了什么？", "2026-04-02", "2026-06-01"),
    # After 的, 近 (最近, 过去) still counts back from now: the company's last three months.
    ("公司的近三个月业绩怎么样？", "2026-03-03", "2026-06-01"),
    ("这两天我在忙什么？", "2026-05-30", "2026-06-01"),
    # A week of a month, and a day of this month (or the latest such day).
    ("四月第一周我在哪？", "2026-04-01", "2026-04-07"),
    ("二月的最后一个星期我在哪？", "2026-02-22", "2026-02-28"),
    ("4号我们去了哪？", "2026-05-04", "2026-05-04"),
    ("20号左右我见了谁？", "2026-05-17", "2026-05-23"),
])
def test_chinese_time_words_name_the_span_they_mean(question: str, first: str,
                                                    last: str) -> None:
    assert named(question) == [(first, last)]


@pytest.mark.parametrize("text", [
    "每个周末都去爬山吗？",  # every weekend
    "下周末有什么安排？",  # next weekend: nothing said of it yet
    "提前两天告诉我",  # two days ahead
    "之前三个月的账单",
    "接近三个月没见了",  # a length of time, not when
    "前一天晚上睡得好吗？",  # the day before some other day
    "3号线怎么走？",  # metro Line 3
    "5号楼在哪？",  # building 5
    # 前N after 的 counts from the event the words before name, not back from now.
    "旅行的前三天我们去了哪里？",  # the trip's first three days
    "怀孕的前三个月要注意什么？",  # the first three months of a pregnancy
    "开学的前两周很忙",  # the first two weeks of term
    "旅行的这几天天气怎么样？",  # the days of the trip
    "第4号选手是谁？",  # contestant number 4
    "4号选手是谁？",
    "选手4号是谁？",
    "我最喜欢选手12号",
    "这一天我永远不会忘记",  # some day the talk is about
])
def test_words_that_only_look_like_these_time_words_name_no_span(text: str) -> None:
    assert named(text) == []


def test_shang_ending_a_word_before_a_weekend_is_that_words() -> None:
    # 楼上 (upstairs) + 个周末: one 上 is the word's, so the weekend just gone, not the one before.
    assert named("楼上个周末搬走了") == named("上个周末")


@pytest.mark.parametrize(("traditional", "simplified"), [
    ("上個月我去了哪裡？", "上个月我去了哪里？"),
    ("上週五我見了誰？", "上周五我见了谁？"),
    ("上禮拜五吃了什麼？", "上礼拜五吃了什么？"),
    ("兩週前我在忙什麼？", "两周前我在忙什么？"),
    ("三月五號我們去了哪？", "三月五号我们去了哪？"),
    ("3月5號見面", "3月5号见面"),
    ("4號我們去了哪？", "4号我们去了哪？"),
    ("這個週末過得怎麼樣？", "这个周末过得怎么样？"),
    ("樓上上個月搬走了", "楼上上个月搬走了"),
])
def test_traditional_time_words_name_the_span_their_simplified_form_names(
        traditional: str, simplified: str) -> None:
    """The patterns are written in simplified characters: 上個月 named nothing, 三月五號 all
    of March."""
    assert named(traditional) == named(simplified) != []


def test_words_that_only_look_like_time_words_in_traditional_name_no_span() -> None:
    assert named("3號線怎麼走？") == named("5號樓在哪？") == named("每個週末都去爬山嗎？") == []


NEXT_WEEKDAYS = ["下周三的安排是什么？", "下礼拜三开会吗", "下个星期五我们做什么？", "下星期天",
                 "下一个周五", "下下周一", "看一下下周三的安排", "下周的周三", "下個星期五呢"]
WEEKDAY_NAMES = "一二三四五六日"


@given(st.sampled_from(NEXT_WEEKDAYS),
       st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)))
def test_a_weekday_to_come_names_no_day(question: str, now: datetime) -> None:
    # 下周三 is next Wednesday: nothing said of it yet, as of "next Wednesday"; it was read
    # as last Wednesday.
    assert spans(question, now.replace(tzinfo=UTC)) == []


@given(st.sampled_from(["这周{}", "本周{}", "这个星期{}", "这礼拜{}"]),
       st.sampled_from(range(7)),
       st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)))
def test_this_weeks_weekday_is_that_day_once_it_has_come(form: str, weekday: int,
                                                         now: datetime) -> None:
    now = now.replace(tzinfo=UTC)
    found = spans(form.format(WEEKDAY_NAMES[weekday]) + "我做了什么？", now)
    monday = now.date() - timedelta(days=now.weekday())
    if weekday > now.weekday():
        assert found == []
    else:
        [day] = found
        assert day.days == ((monday + timedelta(days=weekday)).isoformat(),) * 2


@pytest.mark.parametrize("question, day", [
    ("这周三我做了什么？", "2026-12-02"),  # asked on a Saturday
    ("本周五吃了什么？", "2026-12-04"),
    # 一下 (a look) + 周三, 楼下 (downstairs) + 周三: Wednesday just gone, not next Wednesday.
    ("看一下周三的安排", "2026-12-02"),
    ("楼下周三有人搬家吗？", "2026-12-02"),
])
def test_weekday_after_zhe_or_a_word_ending_in_xia(question: str, day: str) -> None:
    assert [span.days for span in spans(question, datetime(2026, 12, 5, 10, tzinfo=UTC))] \
        == [(day, day)]


@pytest.mark.parametrize("question, first, last", [
    # One space (or an ideographic one) between a number and 年/月/日/号, as many type it:
    # 3 月初 was read as this month's start (月初 alone), 2025 年 12 月 31 日 as all of 2025.
    ("3 月初我在哪？", "2026-03-01", "2026-03-10"),
    ("3　月上旬去了哪？", "2026-03-01", "2026-03-10"),
    ("2025 年 12 月 31 日吃了什么？", "2025-12-31", "2025-12-31"),
    ("12 月 31 日见了谁？", "2025-12-31", "2025-12-31"),
    ("去年 3 月去了哪？", "2025-03-01", "2025-03-31"),
    ("4 号我们去了哪？", "2026-05-04", "2026-05-04"),
])
def test_spaced_dates_name_their_day(question: str, first: str,
                                                        last: str) -> None:
    assert named(question) == [(first, last)]


@pytest.mark.parametrize("text", [
    "3 号线怎么走？", "5 号楼在哪？", "第 4 号选手是谁？", "选手 4 号是谁？",
])
def test_spaced_look_alikes_name_no_span(text: str) -> None:
    assert named(text) == []


@pytest.mark.parametrize("question, first, last", [
    # 周5 and 星期5 are Friday, 上周5 last week's Friday, not the whole week.
    ("周5我们去哪了？", "2026-05-29", "2026-05-29"),
    ("上周5吃了什么？", "2026-05-29", "2026-05-29"),
    ("上上个星期5见了谁？", "2026-05-22", "2026-05-22"),
    # Pangu spacing puts a space between Han and a digit: 周 5 is Friday as 周5 is.
    ("周 5 我们去哪了？", "2026-05-29", "2026-05-29"),
    ("上周 5 吃了什么？", "2026-05-29", "2026-05-29"),
    ("上上个星期 5 见了谁？", "2026-05-22", "2026-05-22"),
])
def test_a_weekday_written_with_a_digit_is_that_day(question: str, first: str,
                                                    last: str) -> None:
    assert named(question) == [(first, last)]


@pytest.mark.parametrize("text", [
    # Every Friday names no one Friday, as "every Friday" does not.
    "每周五都去游泳", "每个星期五开例会", "每逢周五吃鱼", "每星期5健身",
    # A count after 周 is no weekday.
    "一周5次健身", "每周5天上班", "周12",
    "一周 5 次健身", "每周 5 天上班", "周 12", "每星期 5 健身", "每周 5 健身",
])
def test_every_weekday_and_counts_after_zhou_name_no_day(text: str) -> None:
    assert named(text) == []


SUNDAY = datetime(2026, 12, 6, 9, tzinfo=UTC)


def named_on_sunday(text: str) -> list[tuple[str, str]]:
    return [span.days for span in spans(text, SUNDAY)]


@pytest.mark.parametrize("question, day", [
    # 周5晚上 is Friday evening: the lookahead kept for 住5晚 (five nights) refused 晚, so
    # 周5晚上 named nothing and 上周5晚上 the whole of last week.
    ("周5晚上我们去哪了？", "2026-12-04"),
    ("星期5晚上吃了什么？", "2026-12-04"),
    ("上周5晚上见了谁？", "2026-11-27"),
    ("上周五晚上见了谁？", "2026-11-27"),
    ("周5晚饭吃了什么？", "2026-12-04"),
    ("周5晚8点在哪？", "2026-12-04"),
    ("上周 5 晚上见了谁？", "2026-11-27"),
])
def test_a_digit_weekday_before_evening_is_that_day(question: str, day: str) -> None:
    assert named_on_sunday(question) == [(day, day)]


@pytest.mark.parametrize("text", ["一周5晚", "每周5晚上都加班", "一周 5 晚", "每周 5 晚上都加班"])
def test_nights_counted_after_zhou_name_no_day(text: str) -> None:
    assert named_on_sunday(text) == []


@pytest.mark.parametrize("text", [
    # Weekdays listed after 每 are every one of them, as "every Monday, Wednesday and
    # Friday" names none: the lookbehinds covered only the first (12-02 and 12-04 named).
    "我每周一、周三、周五去健身房", "每周二和周四", "每个星期一与星期三开会", "每周一、三、周五",
    "每周六，周日休息", "每周一到周五上班", "every Monday, Wednesday and Friday",
    # 每逢周末, 每到周末 are every weekend (last weekend was named), as 每周末 is.
    "每逢周末去爬山", "每到周末就加班", "每周末",
    # Pangu spacing puts a space after 每.
    "每 周五都去游泳", "每 周末",
])
def test_weekdays_and_weekends_every_names_name_no_day(text: str) -> None:
    assert named_on_sunday(text) == []


@pytest.mark.parametrize("text, day", [
    # A weekday of its own after the list, or one 上 names, is that day.
    ("每周一和上周三", "2026-11-25"),
    ("每周一。周三我去了哪？", "2026-12-02"),
])
def test_a_weekday_outside_every_list_is_that_day(text: str, day: str) -> None:
    assert named_on_sunday(text) == [(day, day)]


@pytest.mark.parametrize("text", [
    # A number ending or after a Latin token is no month: read as March since a space
    # before 月 was allowed.
    "Q3 月报怎么样", "Top 3 月度榜单", "iOS 18 月活多少",
])
def test_a_number_of_a_latin_token_is_no_month(text: str) -> None:
    assert named_on_sunday(text) == []


def test_a_full_date_after_a_latin_word_is_that_day() -> None:
    assert named_on_sunday("deadline 3 月 15 日是哪天说的？") == [("2026-03-15", "2026-03-15")]


@pytest.mark.parametrize(("text", "start"), [
    ("OKR 3 月份复盘", "2026-03-01"),
    ("Sprint 12 月底结束", "2025-12-21"),
    ("trip in 3 月", "2026-03-01"),
    ("Budget for 5 月", "2026-05-01"),
])
def test_a_month_after_a_latin_word_is_a_month_where_its_word_ends(text: str, start: str) -> None:
    # Only where 月 begins another word (Top 3 月度榜单, iOS 18 月活) is the number no month.
    [span] = spans(text, datetime(2026, 12, 6, 9, tzinfo=UTC))
    assert span.days[0] == start


@pytest.mark.parametrize(("text", "days"), [
    ("上周一和周三我在哪？", ["2026-11-23", "2026-11-25"]),
    ("上周一、周三、周五去健身", ["2026-11-23", "2026-11-25", "2026-11-27"]),
    ("上上周二和周四开会", ["2026-11-17", "2026-11-19"]),
    ("这周一和周三做了什么", ["2026-11-30", "2026-12-02"]),
])
def test_a_weekday_listed_after_last_weeks_is_last_weeks(text: str, days: list[str]) -> None:
    # 上周一和周三 read 周三 as this week's (12-02): "last Monday and Wednesday".
    found = spans(text, datetime(2026, 12, 6, 9, tzinfo=UTC))
    assert [span.days[0] for span in found] == days


@pytest.mark.parametrize("question, first, last", [
    # A space typed inside: 上个月 初 is early last month (it was the whole month), 周 五 and
    # 上周 五 a Friday (周 五 named none, 上周 五 all of last week).
    ("上个月 初我们去了杭州", "2026-05-01", "2026-05-10"),
    ("上个月 底发工资了吗？", "2026-05-21", "2026-05-31"),
    ("周 五见了谁？", "2026-05-29", "2026-05-29"),
    ("上周 五吃了什么？", "2026-05-29", "2026-05-29"),
    ("上周 五个人来了", "2026-05-25", "2026-05-31"),  # five people, last week
])
def test_a_space_inside_a_time_word_names_its_span(question: str, first: str,
                                                   last: str) -> None:
    assert named(question) == [(first, last)]


@pytest.mark.parametrize("text", [
    "Top 3 号选手是谁？", "排名 Top 3 号", "iPhone 15 号称最强",  # a Latin token's number
    "这款手机号称续航两天", "周 一起吃饭",
])
def test_spaced_numbers_after_latin_words_name_no_day(text: str) -> None:
    assert named(text) == []


def test_a_word_opening_on_chu_after_a_space_is_no_part_of_the_month() -> None:
    assert named("上个月 初中同学聚会") == [("2026-05-01", "2026-05-31")]
