"""Time words in a question (English and Chinese) and recall's preference for that time."""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, timedelta

import pytest
from fact_conversations import context_with
from hypothesis import given
from hypothesis import strategies as st

from chatmem.memory.time_words import may_name_time, spans, zh_number

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
])
def test_time_words_name_the_span_they_mean(question: str, start: str, end: str) -> None:
    [span] = spans(question, NOW)
    assert (span.start.date(), span.end.date()) == (day(start).date(), day(end).date())


@pytest.mark.parametrize("question", [
    "May I ask what my sister does?", "What is my phone number now?", "我在准备哪项资格认证？",
    "Which book had me hooked most recently?", "我最近迷上了什么？",
    "What happened on February 30, 2023?", "Top 5 things to pack?", "Is 2.1.3 the version?",
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
