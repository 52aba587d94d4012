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


def _positions_read(engine: Any, monkeypatch: pytest.MonkeyPatch) -> list[set[int]]:
    """The positions each candidates' read asks for, from now on."""
    asked: list[set[int]] = []
    execute = engine.store.db.execute

    def traced(sql: str, params: Any = ()) -> Any:
        if "FROM messages m WHERE m.session_id = ? AND m.position IN" in " ".join(sql.split()):
            asked.append({p for p in params[2:]})
        return execute(sql, params)

    monkeypatch.setattr(engine.store.db, "execute", traced)
    return asked


def test_a_later_build_reads_only_candidates_no_build_read_before(
        make_engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session's pools overlap from build to build: each build read its whole pool again
    (~150 rows a turn at 1,000 turns). What one read is kept until text leaves the session's
    memory (tests/engine/test_erasures.py: a purge by another connection)."""
    from chatmem.embeddings.hashed import HashEmbedder

    engine = make_engine("retrieval", embedder=HashEmbedder(), max_tokens=400, recent=1)
    lines = []
    for n in range(30):
        said = (f"Kenji: the vendor contract item {n} is due on May {n % 28 + 1}" if n % 2
                else f"健二：第{n}号合同交给法务，金额{n}千元")
        lines += [{"role": "user", "content": said},
                  {"role": "assistant", "content": f"Noted item {n}. 已记下。"}]
    engine.store.history.import_messages(engine.session.id, lines)
    engine.indexing.finish(engine.embedder)
    asked = _positions_read(engine, monkeypatch)
    questions = ["When is the vendor contract item 7 due?", "健二的合同金额是多少？"]
    first = engine.build_context(questions[0])
    engine.run_turn("Kenji: item 31 is the new vendor contract, due in June.")
    engine.run_turn("健二：第32号合同也交给法务。")
    later = [engine.build_context(q) for q in questions]
    read = [p for positions in asked for p in positions]
    assert len(read) == len(set(read)), "a position was read again"
    assert len(asked[0]) > 20  # the first build read a pool
    # The same contexts as builds that keep nothing.
    engine.state.caches.clear()
    assert engine.build_context(questions[0]).messages() == later[0].messages()
    engine.state.caches.clear()
    fresh = engine.build_context(questions[1])
    assert fresh.messages() == later[1].messages() and fresh.recall == later[1].recall
    assert first.part("recalled") is not None and later[1].part("recalled") is not None
