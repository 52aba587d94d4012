"""A row that fails to parse never breaks a command with a traceback: one line names it.

On PostgreSQL such a row can come from another role that may write the session (a write
share) or from a hand with psql; on SQLite from a hand editing the file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_runner import invoke
from pg import PostgresServer

from chatmem.errors import StoreError


def bad_rows(run: Callable[[str, list[Any]], list[Any]], session: str) -> tuple[int, int]:
    """A message and a fact with a created_at no ISO 8601 reader takes; their ids. The
    message goes after the session's one turn."""
    session_id = run("SELECT id FROM sessions WHERE name = ?", [session])[0][0]
    message = run("INSERT INTO messages (session_id, position, turn, role, content, created_at)"
                  " VALUES (?, 3, 2, 'user', 'planted', 'yesterday-ish') RETURNING id",
                  [session_id])[0][0]
    fact = run("INSERT INTO facts (scope, session_id, key, value, created_at, updated_at)"
               " VALUES ('session', ?, 'planted', 'v', '2026-13-45', '2026-13-45') RETURNING id",
               [session_id])[0][0]
    return int(message), int(fact)


COMMANDS = (("facts", "list", "--session", "trip"), ("sessions", "show", "trip"),
            ("sessions", "export", "trip", "-o", "-"), ("ask", "hi", "--session", "trip",
                                                        "--provider", "scripted"))


def assert_one_line_each(db: str, message: int, fact: int) -> None:
    for command in COMMANDS:
        result = invoke(*command, "--db", db)
        lines = result.stderr.splitlines()
        assert result.exit_code == int(StoreError.exit_code), (command, result.stderr)
        assert "Traceback" not in result.stderr, (command, result.stderr)
        named = f"fact {fact} ('planted')" if command[0] == "facts" else f"message {message} "
        if command[0] == "ask":  # retention, tried first, says why it did not run this time
            warning = lines.pop(0)
            assert warning.startswith(f"retention not applied this time: fact {fact} "), lines
        assert len(lines) == 1 and lines[0].startswith("error: " + named), (command, lines)


def test_on_a_file_edited_by_hand(tmp_path: Path) -> None:
    import sqlite3

    db = str(tmp_path / "h.db")
    invoke("ask", "hello", "--session", "trip", "--provider", "scripted", "--db", db, code=0)
    with sqlite3.connect(db) as conn:
        ids = bad_rows(lambda sql, p: conn.execute(sql, p).fetchall(), "trip")
    assert_one_line_each(db, *ids)


def test_on_a_database_edited_by_hand(pg_server: PostgresServer, pg_template: str) -> None:
    """By its owner's psql: a write grantee's message is dated by the server (p018,
    test_postgres_grantee_writes)."""
    database = pg_server.create_database(pg_template)
    try:
        bob = pg_server.url(database, "bob")
        invoke("ask", "hello", "--session", "trip", "--provider", "scripted", "--db", bob,
               code=0)
        with pg_server.driver.connect(bob, autocommit=True) as conn:
            ids = bad_rows(lambda sql, p: conn.execute(sql.replace("?", "%s"), p).fetchall(),
                           "trip")
        assert_one_line_each(bob, *ids)
    finally:
        pg_server.drop_database(database)
