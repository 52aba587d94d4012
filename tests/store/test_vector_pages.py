"""message_vectors' rows on SQLite's pages (m023): each in its page, none in an overflow page
of its own, and a file from before upgraded keeping every vector byte for byte."""

from __future__ import annotations

import hashlib
import os

import pytest
from conftest import History

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.errors import NotChatmemDatabase
from chatmem.memory.indexing import Indexing
from chatmem.store import Store
from chatmem.store.schema import MIGRATION_LIST, MIGRATIONS
from chatmem.store.vectors import VectorRow

M023 = "m023_vectors_kept_in_their_page"
VECTORS = "SELECT * FROM message_vectors ORDER BY model, message_id"
CACHE = "SELECT * FROM vector_cache ORDER BY model, digest"
TALK = ["My locker is 4417 and the code is QX-48213.", "我们五月去杭州旅行，住在西湖边的琉璃客栈。",
        "The courier is called Tobiasz Wrenfield.", "预算是五千元。"]
# m003's table and m021's index: the file as chatmem wrote it up to m022.
BEFORE = (
    """CREATE TABLE message_vectors_before (
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dimensions INTEGER NOT NULL,
        vector BLOB NOT NULL,
        context_vector BLOB NOT NULL,
        PRIMARY KEY (model, message_id)
    ) WITHOUT ROWID""",
    "INSERT INTO message_vectors_before SELECT * FROM message_vectors",
    "DROP TABLE message_vectors",
    "ALTER TABLE message_vectors_before RENAME TO message_vectors",
    "CREATE INDEX message_vectors_message ON message_vectors (message_id)",
)


def used_pages(store: Store) -> int:
    """The file's pages holding something (SQLCipher has no dbstat to count a table's)."""
    return int(store.db.execute("PRAGMA page_count").fetchone()[0]) - int(
        store.db.execute("PRAGMA freelist_count").fetchone()[0])


def filled(store: Store) -> tuple[int, int]:
    """A session of English and Chinese turns with the hash embedder's vectors (256
    dimensions, as a turn's are), another model's of 8 on every message, the last turn
    hidden (a /retry under way). Returns the session and the pages the 240 vectors of 256
    dimensions took (their cache entries included)."""
    session = store.sessions.create_session("trip", "retrieval", {}, provider="scripted",
                                            model="m", system="", user="default")
    store.history.import_messages(session.id, [
        {"role": role, "content": f"{line} ({n}, {role})"}
        for n in range(30) for line in TALK for role in ("user", "assistant")])
    before = used_pages(store)
    Indexing(store, session.id, background=False).finish(HashEmbedder())
    pages = used_pages(store) - before
    ids = [m.id for m in store.history.messages(session.id)]
    store.vectors.save_vectors("other:8", 8, [
        VectorRow(i, os.urandom(16), os.urandom(16), hashlib.sha256(b"%d" % i).hexdigest())
        for i in ids])
    with store.db.write():
        store.db.execute("UPDATE messages SET superseded = 1 WHERE id = ?", [ids[-1]])
    return session.id, pages


@pytest.mark.sqlite_only("the file's pages and its migration")
def test_a_vector_row_stays_in_its_page(history: History) -> None:
    """Every row (two 512-byte vectors and its keys) took an overflow page of its own,
    three quarters empty: ~10 kB of file and ~12 kB of WAL a turn for ~2 kB of vectors."""
    with history.open() as store:
        _, pages = filled(store)
        assert store.db.execute("SELECT count(*) FROM message_vectors").fetchone()[0] == 480
        # 1,044 bytes a row: about a quarter of a 4 KiB page, not one and a quarter.
        assert pages < 240 * 0.4, pages


@pytest.mark.sqlite_only("the file's pages and its migration")
def test_a_file_from_before_upgrades_keeping_every_vector(
        history: History, monkeypatch: pytest.MonkeyPatch) -> None:
    with history.open() as store:
        session_id, _ = filled(store)
        with store.db.write():
            for statement in BEFORE:
                store.db.execute(statement)
            store.db.execute("DELETE FROM _sqlite_migrations WHERE name = ?", [M023])
        vectors = store.db.execute(VECTORS).fetchall()
        cache = store.db.execute(CACHE).fetchall()
        # A vector of a message gone, as the sqlite3 shell (foreign keys off) leaves one.
        store.db.execute("PRAGMA foreign_keys = OFF")
        with store.db.write():
            store.db.execute("INSERT INTO message_vectors VALUES (999999, 'other:8', 8, ?, ?)",
                             [b"g" * 16, b"h" * 16])
        store.db.execute("PRAGMA foreign_keys = ON")
        batch = store.vectors.vector_batch(session_id, HashEmbedder().key)
        before = used_pages(store)
    with history.open() as store:
        assert store.db.execute(VECTORS).fetchall() == vectors  # the one gone left out
        assert store.db.execute("PRAGMA foreign_key_check").fetchall() == []
        assert store.db.execute(CACHE).fetchall() == cache
        assert store.vectors.vector_batch(session_id, HashEmbedder().key) == batch
        assert len(batch.positions) == 239  # the hidden message's is kept, not read
        # The 256-dimension rows' overflow pages (one each) freed, less the pages they moved to.
        assert before - used_pages(store) > 240 * 0.7, (before, used_pages(store))
        assert "WITHOUT ROWID" not in store.db.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'message_vectors'").fetchone()[0]
        # Written, found by the text, and deleted with its message as before.
        store.vectors.save_vectors("other:8", 8, [VectorRow(vectors[0][0], b"n" * 16,
                                                            b"c" * 16, "d")])
        assert store.vectors.cached_vectors("other:8", ["d"]) == {"d": b"n" * 16}
        store.sessions.delete_session("trip")
        assert store.db.execute("SELECT count(*) FROM message_vectors").fetchone()[0] == 0
    # A chatmem from before m023 refuses the upgraded file, changing nothing.
    monkeypatch.setattr(MIGRATION_LIST, "functions", MIGRATIONS[:-1])
    with pytest.raises(NotChatmemDatabase, match=M023):
        history.open()
