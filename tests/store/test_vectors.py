"""The vectors a session's recall reads whole when it opens, and what reading them leaves."""

from __future__ import annotations

import _sqlite3
import ctypes
from pathlib import Path

from meter import metered

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.memory.indexing import Indexing
from chatmem.store import Store

MIB = 1024 * 1024


def _sqlite_memory() -> int:
    """What SQLite holds in this process now (sqlite3_status64, SQLITE_STATUS_MEMORY_USED)."""
    held, highest = ctypes.c_int64(), ctypes.c_int64()
    assert ctypes.CDLL(_sqlite3.__file__).sqlite3_status64(
        0, ctypes.byref(held), ctypes.byref(highest), 0) == 0
    return held.value


def test_reading_a_long_sessions_vectors_whole_leaves_no_page_cache_of_them(
        tmp_path: Path) -> None:
    """The 32 MiB of pages a connection may keep held the vectors read once as recall
    opened a long session (its arrays keep them): for each engine a server keeps open."""
    db = tmp_path / "h.db"
    with Store(db) as store:
        session = store.sessions.create_session("long", "retrieval", {}, provider="scripted",
                                                model="m", system="", user="default")
        store.history.import_messages(session.id, [
            {"role": role, "content": f"第{n}轮: locker {n % 97} ORD-{n} {role}"}
            for n in range(3_000) for role in ("user", "assistant")])
        Indexing(store, session.id, background=False).finish(HashEmbedder())
    with Store(db) as store:
        model = HashEmbedder().key
        store.vectors.vector_batch(session.id, model, after_id=10**9)  # opened, nothing read
        before = _sqlite_memory()
        batch = store.vectors.vector_batch(session.id, model)
        assert len(batch.positions) == 6_000
        assert _sqlite_memory() - before < 2 * MIB
        # Read on from there, as each turn does: its new vectors alone.
        assert store.vectors.vector_batch(session.id, model,
                                          after_id=batch.last_id).positions == []


def test_reading_on_from_an_older_sessions_last_vector_reads_no_later_sessions_vectors(
        tmp_path: Path) -> None:
    """Each turn reads the vectors stored since the last it read. A session with later
    sessions in its history (a server's older conversations) went on through every vector
    of theirs, its own all read: 2,000 turns each of 12 conversations cost a turn 44 ms and
    up to 32 MiB of pages, in each engine a server keeps open."""
    with Store(tmp_path / "h.db") as store:
        sessions = []
        for name, turns in (("旧的", 20), ("newer", 2_000)):
            session = store.sessions.create_session(name, "retrieval", {},
                                                    provider="scripted", model="m",
                                                    system="", user="default")
            store.history.import_messages(session.id, [
                {"role": role, "content": f"第{n}轮 {name}: locker {n % 97} {role}"}
                for n in range(turns) for role in ("user", "assistant")])
            Indexing(store, session.id, background=False).finish(HashEmbedder())
            sessions.append(session.id)
        older, newer = sessions
        model = HashEmbedder().key
        whole = store.vectors.vector_batch(older, model, dimensions=256)
        assert len(whole.positions) == 40
        with metered(store.connection) as later:
            assert store.vectors.vector_batch(older, model, after_id=whole.last_id,
                                              dimensions=256).positions == []
        newest = store.vectors.vector_batch(newer, model, dimensions=256)
        assert len(newest.positions) == 4_000
        with metered(store.connection) as last:
            assert store.vectors.vector_batch(newer, model, after_id=newest.last_id,
                                              dimensions=256).positions == []
        # Reading on from the older session's last vector costs what reading on from the
        # newest's does, not a pass over the 4,000 vectors after it.
        assert later.steps <= last.steps + 2
        assert [row.position for row in store.vectors.vector_rows(
            older, model, after_id=whole.last_id)] == []
        assert len(store.vectors.vector_rows(older, model)) == 40
        # The older chat goes on: its new turn's ids come after every other session's.
        store.history.import_messages(older, [{"role": "user", "content": "我们五月去杭州。"},
                                              {"role": "assistant", "content": "Noted."}])
        Indexing(store, older, background=False).finish(HashEmbedder())
        with metered(store.connection) as turn:
            new = store.vectors.vector_batch(older, model, after_id=whole.last_id,
                                             dimensions=256)
        assert new.positions == [41, 42]
        assert turn.steps <= last.steps + 2
        assert [row.position for row in store.vectors.vector_rows(older, model)] == list(
            range(1, 43))
