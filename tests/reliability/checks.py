"""What a history file must look like after anything: the invariants the crash,
concurrency and fault tests assert."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path


def rows(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def assert_file_consistent(db: Path) -> None:
    """integrity_check ok; every turn complete or absent; derived state points at messages."""
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    if not rows(db, "SELECT name FROM sqlite_master WHERE name = 'sessions'"):
        # Killed before its schema committed: an empty file the next command builds on.
        assert rows(db, "SELECT count(*) FROM sqlite_master WHERE name != '_sqlite_migrations'"
                        " AND name NOT LIKE 'sqlite_%'") == [(0,)]
        return
    assert rows(db, "PRAGMA foreign_key_check") == []
    for (session_id,) in rows(db, "SELECT id FROM sessions"):
        messages = rows(db, "SELECT id, position, turn, role FROM messages WHERE session_id = ?"
                            " ORDER BY position", (session_id,))
        assert [m[1] for m in messages] == list(range(1, len(messages) + 1))
        # Chats store a turn as user + assistant, in one transaction.
        assert [m[3] for m in messages] == ["user", "assistant"] * (len(messages) // 2)
        assert [m[2] for m in messages] == [i // 2 + 1 for i in range(len(messages))]
        ids = {m[0] for m in messages}
        turns = rows(db, "SELECT number, status, user_message_id, assistant_message_id,"
                         " history_turn FROM turns WHERE session_id = ? ORDER BY number",
                     (session_id,))
        assert [t[0] for t in turns] == list(range(1, len(turns) + 1))
        ok = [t for t in turns if t[1] == "ok"]
        assert len(ok) == len(messages) // 2
        for _, _, user_id, assistant_id, history_turn in ok:
            assert {user_id, assistant_id} <= ids
            assert history_turn is not None
        for (covered,) in rows(db, "SELECT covered_ids FROM summaries WHERE session_id = ?",
                               (session_id,)):
            assert set(json.loads(covered)) <= ids
        last_turn = len(messages) // 2
        for key, value in rows(db, "SELECT key, value FROM strategy_state WHERE session_id = ?",
                               (session_id,)):
            if key.endswith("_turn"):
                assert json.loads(value) is None or json.loads(value) <= last_turn, key
    # The full-text index has exactly one row per message.
    assert rows(db, "SELECT rowid FROM messages_fts ORDER BY rowid") == rows(
        db, "SELECT id FROM messages ORDER BY id")
    for (source,) in rows(db, "SELECT source_message_id FROM facts"
                              " WHERE source_message_id IS NOT NULL"):
        assert rows(db, "SELECT 1 FROM messages WHERE id = ?", (source,)) == [(1,)]
