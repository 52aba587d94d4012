"""Erasing a session, or pruning many: the work under the write lock grows with what is
erased, linearly. Counted, not timed (tests/meter.py).

The index entries of an erased session's messages went by their ids, read into Python
and deleted 500 at a time: on SQLite each statement wrote FTS5 a segment of its own and,
the ids coming in the order of the session's pauses, read a page of the index's content
per id; a 100,000-message session held the lock 14 s. Now one statement per batch of
sessions deletes them in message order, and no id comes back to Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from meter import metered

from chatmem import fts
from chatmem.store import Store

SMALL, LARGE = 20, 1_100
"""LARGE is over two of the 500-id batches the old code deleted by."""


def conversation(count: int, word: str) -> Iterator[dict[str, str]]:
    # Pauses of every length: the session's pause index reads its ids out of order.
    at = datetime(2025, 1, 1, tzinfo=UTC)
    for n in range(count):
        at += timedelta(minutes=(n * 7919) % 300 + 1)
        content = f"{word} order ORD-{n} 我们五月去杭州旅行 item {n}"
        yield {"role": "user" if n % 2 == 0 else "assistant", "content": content,
               "ts": at.isoformat()}


def stored(store: Store, name: str, count: int) -> int:
    session = store.sessions.create_session(name, "window")
    store.history.import_messages(session.id, list(conversation(count, name)))
    return session.id


def found(store: Store, word: str) -> int:
    return len(store.db.word_scores(fts.query_terms(word), None, None, 10_000))


def test_deleting_a_session_reads_nothing_back_however_long_it_is(store: Store) -> None:
    stored(store, "kept", SMALL)
    work = {}
    for name, count in (("short", SMALL), ("long", LARGE)):
        stored(store, name, count)
        with metered(store) as meter:
            store.sessions.delete_session(name)
        work[name] = meter.rows
        assert found(store, name) == 0
    assert work["long"] == work["short"], work  # the old code read back every message id
    assert found(store, "kept") == SMALL  # another session's entries stay


def test_pruning_many_sessions_reads_nothing_back_however_long_they_are(store: Store) -> None:
    stored(store, "kept", SMALL)
    work = {}
    for name, count in (("short", SMALL), ("long", LARGE)):
        ids = [stored(store, f"{name}{n}", count) for n in range(3)]
        with metered(store) as meter:
            store.retention.erase_sessions(ids)
        work[name] = meter.rows
        assert all(found(store, f"{name}{n}") == 0 for n in range(3))
    assert work["long"] == work["short"], work
    assert found(store, "kept") == SMALL


def test_an_erased_session_s_words_go_in_one_index_statement(tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        stored(store, "long", LARGE)
        statements: list[str] = []
        store.db.conn.set_trace_callback(statements.append)
        try:
            store.sessions.delete_session("long")
        finally:
            store.db.conn.set_trace_callback(None)
        deletes = [s for s in statements if s.startswith("DELETE FROM messages_fts")]
        assert len(deletes) == 1, deletes  # was one per 500 ids
        assert found(store, "long") == 0
