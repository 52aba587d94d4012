"""What of a question is searched by its words once its time words are read as a time:
the 4 of `May 4` or the day of `three days ago` is no content word; a month's or a
weekday's name (June, Friday, 周五, 三月) is, as a message may say it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from asked import asked_after
from fact_conversations import context_with

from chatmem import fts
from chatmem.memory.time_words import read

NOW = datetime(2026, 5, 7, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize("question, searched", [
    ("What did we decide on May 4?", ["decide"]),
    ("What was decided three days ago?", ["decided"]),
    ("What did we decide on 2026-05-04?", ["decide"]),
    ("What did we eat last month and yesterday?", ["eat"]),
    ("5月4日我们决定了什么？", ["们决", "决定", "定了", "了什"]),
    ("我们前天决定了什么？", ["决定", "定了", "了什"]),
    # Traditional characters and full-width letters are read as the folded ones.
    ("我們前天決定了什麼？", ["决定", "定了", "了什"]),
    # Names of a month or a weekday stay.
    ("When did we go camping in June?", ["go", "camping", "june"]),
    ("What did we do last Friday?", ["friday"]),
    ("我们上周五决定了什么？", ["周五", "五决", "决定", "定了", "了什"]),
    ("三月下旬吃了什么？", ["三月", "吃了", "了什"]),
    ("ｙｅｓｔｅｒｄａｙ的会议纪要", ["的会", "会议", "议纪", "纪要"]),
])
def test_the_words_that_name_a_time_are_not_searched(question: str,
                                                      searched: list[str]) -> None:
    named, rest = read(question, NOW)
    assert named
    assert fts.search_terms(rest) == searched


@pytest.mark.parametrize("question", [
    "What is planned for the weekend?",  # the weekend alone names no time
    "Which room is on the 4th floor?",
    "楼上的会议室在哪？",
])
def test_words_that_name_no_time_are_searched(question: str) -> None:
    assert read(question, NOW) == ([], question)


ASK_DAY = "2026-05-07"
DECIDED = {"2026-05-01": "We agreed to move the launch to June.",
           "2026-05-04": "Kenji sends the vendor contract to legal."}
ZH_DECIDED = {"2026-05-01": "我们决定把发布推迟到六月。",
              "2026-05-04": "健二把供应商合同交给法务。"}
CHATTER = ["1. Updates 2. Decisions 3. Action items 4. AOB",
           "Start, stop, continue: one day at a time."]
ZH_CHATTER = ["提醒我每周五交周报。", "周五的例会改到下午4点。"]


def _said(engine, decided: dict[str, str], chatter: list[str]) -> None:
    lines = [{"role": "user", "content": text, "ts": f"{on}T09:00:00+00:00"}
             for on, text in decided.items()]
    for n in range(12):
        lines.append({"role": "user", "content": chatter[n % len(chatter)],
                      "ts": f"{ASK_DAY}T09:{n:02d}:00+00:00"})
    engine.store.history.import_messages(engine.session.id, lines)
    asked_after(engine.store, engine.session.id)


@pytest.mark.parametrize("question, decided, chatter, expected", [
    ("What did we decide on May 4?", DECIDED, CHATTER, "2026-05-04"),
    ("What was decided three days ago?", DECIDED, CHATTER, "2026-05-04"),
    ("上周五我们决定了什么？", ZH_DECIDED, ZH_CHATTER, "2026-05-01"),
    ("5月4日说了什么？", ZH_DECIDED, ZH_CHATTER, "2026-05-04"),
])
def test_recall_by_words_brings_what_was_said_then_not_what_repeats_the_time_words(
        make_engine, question: str, decided: dict[str, str], chatter: list[str],
        expected: str) -> None:
    """Chatter of the day asked on says 4, day or 周五 again and again: searched as words,
    those outweighed the day the question names (its message shares no other word)."""
    engine = make_engine("retrieval", mode="bm25")
    _said(engine, decided, chatter)
    context = context_with(engine, "retrieval", question, mode="bm25", max_tokens=60,
                           recent=0, sitting=0)
    recalled = [m.content for m in context.part("recalled").messages]
    assert recalled[0] == decided[expected]
    assert not any(text in chatter for text in recalled)
