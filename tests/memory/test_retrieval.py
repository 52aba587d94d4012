"""`retrieval`: earlier turns recalled by BM25 over the FTS5 index, in time order, labelled."""

from __future__ import annotations

import re

import pytest
from fact_conversations import (
    ENGLISH_FILLER,
    chinese_session,
    context_with,
    english_session,
)

from chatmem.memory import create_strategy
from chatmem.memory.base import ContextRequest, ListHistory, Message
from chatmem.memory.retrieval import bm25_turns


def recalled_turns(context) -> list[int]:
    part = context.part("recalled")
    return [] if part is None else sorted({m.turn for m in part.messages})


def reason_scores(context) -> dict[int, float]:
    return {int(n): float(s) for n, s in
            re.findall(r"turn (\d+) \((\d+\.\d+)\)", context.part("recalled").reason)}


def test_a_question_naming_the_order_recalls_the_turn_that_stated_it(make_engine) -> None:
    engine = english_session(make_engine, "retrieval")
    context = context_with(engine, "retrieval", "Where is my order?")
    assert recalled_turns(context) == [2]
    recalled = context.part("recalled")
    assert [m.role for m in recalled.messages] == ["user", "assistant"]
    assert "ORD-7731" in recalled.messages[0].content
    assert set(reason_scores(context)) == {2} and reason_scores(context)[2] > 0
    assert [m.turn for m in context.part("history").messages] == [38, 38, 39, 39]


def test_recalled_turns_are_whole_in_time_order_and_never_repeat_the_recent_window(
    make_engine
) -> None:
    engine = english_session(make_engine, "retrieval")
    question = "Tell me about volcanoes, glaciers and fossils and wolves and auroras"
    context = context_with(engine, "retrieval", question, top_k=3, recent=2)
    turns = recalled_turns(context)
    assert len(turns) == 3 and turns == sorted(turns)
    stated = {5 + ENGLISH_FILLER.index(f"Tell me one curious thing about {t}.") + 1
              for t in ("volcanoes", "glaciers", "fossils", "wolves", "auroras")}
    assert set(turns) <= stated
    assert list(reason_scores(context)) == turns
    messages = context.part("recalled").messages
    assert [m.turn for m in messages] == [t for t in turns for _ in range(2)]
    history = {m.turn for m in context.part("history").messages}
    assert history == {38, 39} and not history & set(turns)


def test_recent_turns_are_not_recalled_again(make_engine) -> None:
    engine = english_session(make_engine, "retrieval")
    context = context_with(engine, "retrieval", "curious thing about fossils", recent=5)
    assert ENGLISH_FILLER[-1].endswith("fossils.")
    assert 39 in {m.turn for m in context.part("history").messages}
    recalled = recalled_turns(context)
    assert recalled and max(recalled) < 35


def test_chinese_question_recalls_the_turn_that_stated_hangzhou(make_engine) -> None:
    engine = chinese_session(make_engine, "retrieval")
    context = context_with(engine, "retrieval", "我们去杭州的计划是什么？")
    assert recalled_turns(context)[0] == 4
    assert reason_scores(context)[4] == max(reason_scores(context).values())
    assert "杭州" in context.part("recalled").messages[0].content


@pytest.mark.parametrize("query", ['"', "*", "NEAR", "-", ":", 'order" OR "x', "NEAR(a b)",
                                   "order*", "-order", "order:ORD", "^order", "AND OR NOT",
                                   "（杭州）。「预算」！", "ORD-7731？杭州，"])
def test_queries_with_fts5_syntax_never_fail(make_engine, query: str) -> None:
    engine = english_session(make_engine, "retrieval")
    context = context_with(engine, "retrieval", query)
    assert context.parts[-1].messages[0].content == query
    if "ORD" in query or "order" in query.lower():
        assert 2 in recalled_turns(context)


def test_top_k_zero_recalls_nothing(make_engine) -> None:
    engine = english_session(make_engine, "retrieval")
    assert context_with(engine, "retrieval", "Where is my order?", top_k=0).part("recalled") is None


def test_without_a_stored_index_turns_are_ranked_the_same_way(make_engine) -> None:
    """Replays over an in-memory transcript rank with BM25 in Python, like FTS5."""
    engine = english_session(make_engine, "retrieval")
    stored = context_with(engine, "retrieval", "Where is my order?")
    history = ListHistory(list(engine.history().turns(1, 39)))
    question = Message("user", "Where is my order?", 9)
    request = ContextRequest(history=history, input=question, counter=engine.counter)
    in_memory = create_strategy("retrieval").build(request)
    assert recalled_turns(in_memory) == recalled_turns(stored) == [2]


def test_bm25_prefers_the_rarer_word() -> None:
    history = ListHistory.from_messages(
        [Message("user", text, 5, i, i) for i, text in
         enumerate(["the plan is set", "the plan", "the hangzhou plan", "plan plan"], 1)]
    )
    scores = bm25_turns(history.turns(1, 4), "hangzhou plan")
    assert max(scores, key=lambda n: scores[n]) == 3
