"""What a recall build reads of its candidates: each message once. The days its pool was
said on (recall_days) come with the candidates' read, where they were a second read of the
same messages by position (about 300 at a long history, each turn)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from fact_conversations import context_with
from test_recall_days import MEETING_ZH, meeting

from chatmem.errors import StoreError, StoreFailure

QUESTIONS = [(None, "When is Kenji's vendor contract due to legal?", date(2026, 5, 4)),
             (MEETING_ZH, "健二的供应商合同什么时候交法务？", date(2026, 5, 5))]


def _traced(engine: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL the engine's store runs from now on."""
    seen: list[str] = []
    execute = engine.store.db.execute

    def traced(sql: str, params: Any = ()) -> Any:
        seen.append(" ".join(sql.split()))
        return execute(sql, params)

    monkeypatch.setattr(engine.store.db, "execute", traced)
    return seen


@pytest.mark.parametrize("lines, question, day", QUESTIONS)
def test_a_build_reads_its_candidates_and_the_days_they_were_said_at_once(
        make_engine, monkeypatch: pytest.MonkeyPatch, lines, question: str, day: date) -> None:
    engine = meeting(make_engine, *([lines] if lines else []))
    seen = _traced(engine, monkeypatch)
    context = context_with(engine, "retrieval", question, mode="bm25", max_tokens=300)
    recalled = context.part("recalled")
    assert recalled is not None and recalled.messages[0].said_on == day
    by_position = [sql for sql in seen if "FROM messages" in sql and "position IN" in sql]
    assert len(by_position) == 1, by_position


def test_a_candidate_whose_time_was_damaged_is_named_as_before(make_engine) -> None:
    engine = meeting(make_engine)
    first = engine.store.history.messages(engine.session.id)[0]
    with engine.store.write():
        engine.store.db.execute("UPDATE messages SET created_at = 'last Monday' WHERE id = ?",
                                [first.id])
    with pytest.raises(StoreError) as raised:
        context_with(engine, "retrieval", "When is Kenji's vendor contract due to legal?",
                     mode="bm25", max_tokens=300)
    assert raised.value.kind is StoreFailure.DAMAGED
    assert f"message {first.id} " in str(raised.value) and "'last Monday'" in str(raised.value)
