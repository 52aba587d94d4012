"""The write-ahead log folded between turns (Store.tidy → sqlite_files.restart_log): started
over there, so the next turn's commit appends to it and does not first sync a new header."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from chatmem.store import Store

SAID = [{"role": "user", "content": "我们第{i}天去杭州看西湖"},
        {"role": "assistant", "content": "Day {i}: the order ships to Porto"}]


def said(i: int) -> list[dict[str, str]]:
    return [{**m, "content": m["content"].format(i=i)} for m in SAID]


def log_header(path: Path) -> bytes:
    """The log's 32-byte header: SQLite writes (and syncs) a new one when it starts over."""
    with open(f"{path}-wal", "rb") as log:
        return log.read(32)


def contents(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return [r[0] for r in conn.execute("SELECT content FROM messages ORDER BY id")]
    finally:
        conn.close()


def test_the_turn_after_a_fold_writes_no_new_log_header(tmp_path: Path) -> None:
    path = tmp_path / "历史.db"
    with Store(path) as store:
        session = store.sessions.create_session("旅行", "window")
        for i in range(3):
            store.history.import_messages(session.id, said(i))
        store.tidy(fold_log=True)
        folded = log_header(path)
        store.history.import_messages(session.id, said(3))
        assert log_header(path) == folded
        store.tidy(fold_log=True)
        assert log_header(path) != folded  # started over again, between turns
    assert contents(path) == [m["content"] for i in range(4) for m in said(i)]


def test_a_fold_does_not_wait_for_another_connections_write(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with Store(path) as store:
        session = store.sessions.create_session("s", "window")
        store.history.import_messages(session.id, said(0))
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # holds the write lock
            started = time.monotonic()
            store.tidy(fold_log=True)
            assert time.monotonic() - started < 2  # the busy timeout is 5 s
            other.execute("ROLLBACK")
        finally:
            other.close()
        store.history.import_messages(session.id, said(1))
    assert contents(path) == [m["content"] for i in range(2) for m in said(i)]
