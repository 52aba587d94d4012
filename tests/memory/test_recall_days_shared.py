"""A combination's shared budget may cut recalled messages after recall named their days:
the lines are worked out again on what is sent, so the first message left of a day's run
still names that day, and none reads as covering history."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from fact_conversations import context_with
from test_recall_days import meeting

from chatmem.memory.recall_days import said_days
from chatmem.store import FactScope


def with_facts(engine):
    for i in range(6):
        engine.store.facts.upsert_fact(f"note {i}", "some longer fact value about the project " * 2,
                                       scope=FactScope.SESSION, session_id=engine.session.id)
    return engine


QUESTION = "When is Olu's load test due? and Kenji's contract"


@pytest.mark.parametrize("budget", [285, 300, 320, 325, 340])
def test_a_day_line_survives_a_shared_cut(make_engine, budget: int) -> None:
    engine = with_facts(meeting(make_engine))
    context = context_with(engine, "entity+retrieval", QUESTION,
                           **{"entity.k": 1, "retrieval.mode": "bm25",
                              "retrieval.max_tokens": budget})
    recalled = context.part("recalled")
    assert recalled is not None
    messages = recalled.messages
    # Turns 1 and 2 were said on 4 May, turns 3 on the 7th (the newest message's day).
    said = {m.turn: date(2026, 5, 4) if (m.turn or 0) <= 2 else date(2026, 5, 7)
            for m in messages}
    expected = said_days(list(range(len(messages))),
                         {i: _noon(said[m.turn]) for i, m in enumerate(messages)},
                         date(2026, 5, 7))
    assert {i: m.said_on for i, m in enumerate(messages) if m.said_on} == expected
    assert messages[0].said_on is not None or said[messages[0].turn] == date(2026, 5, 7)
    # Each message counted as sent, the lines within the budget, the reason says what is sent.
    assert all(m.tokens == engine.counter.count_message(m.role, m.sent) for m in messages)
    assert context.tokens <= budget and not context.over_budget
    assert recalled.reason.dated == len(expected)


def _noon(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, 12, tzinfo=UTC)


def test_dates_off_sends_no_line_in_a_combination(make_engine) -> None:
    engine = with_facts(meeting(make_engine))
    context = context_with(engine, "entity+retrieval", QUESTION,
                           **{"entity.k": 1, "retrieval.mode": "bm25",
                              "retrieval.max_tokens": 300, "retrieval.dates": False})
    recalled = context.part("recalled")
    assert recalled is not None
    assert all(m.said_on is None for p in context.parts for m in p.messages)
    assert recalled.reason.dated == 0
