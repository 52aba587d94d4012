"""The vectors a session's recall reads whole when it opens, and what reading them leaves."""

from __future__ import annotations

import _sqlite3
import ctypes
from pathlib import Path

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
