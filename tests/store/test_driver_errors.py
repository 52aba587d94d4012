"""A real driver error never leaves the store as the driver's: each is a StoreError of its
kind, naming the file or the masked URL (chatmem.errors.StoreFailure)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from cli_runner import invoke
from pg import PostgresServer

from chatmem.errors import DatabaseError, StoreConflict, StoreError, StoreFailure
from chatmem.store import Store

# -- SQLite ------------------------------------------------------------------------------


def _session_with_messages(path: Path, count: int = 200) -> None:
    with Store(path) as store:
        session = store.sessions.create_session("s", "window")
        store.history.import_messages(session.id, [
            {"role": "user", "content": f"message {i} 消息 " * 100} for i in range(count)])
        store.db.fold_log()  # the whole history in the file itself, not in its log


def test_a_statement_sqlite_refuses_is_a_database_error(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with Store(path) as store, pytest.raises(DatabaseError) as caught:
        store.db.execute("SELECT no_such_column FROM sessions")
    assert (caught.value.kind, caught.value.location) == (StoreFailure.DRIVER, str(path))
    assert caught.value.reason == "no such column: no_such_column"
    assert caught.value.exit_code == 1


def test_a_broken_constraint_is_a_conflict(tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        store.sessions.create_session("s", "window")
        with pytest.raises(StoreConflict) as caught, store.write():
            store.db.execute("INSERT INTO sessions (name, strategy, created_at, updated_at)"
                             " VALUES ('s', 'window', '', '')")
        assert caught.value.kind is StoreFailure.CONFLICT
        # What the store expects of a conflict it still says in its own words.
        with pytest.raises(StoreError, match="a session named 's' already exists"):
            store.sessions.create_session("s", "window")


def test_a_corrupted_page_read_is_a_damaged_store(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    _session_with_messages(path)
    data = bytearray(path.read_bytes())
    page = 4096
    at = data.index("message 100 消息".encode()) // page * page  # a page of the messages
    data[at : at + page] = b"\xff" * page
    path.write_bytes(bytes(data))
    with Store(path) as store, pytest.raises(DatabaseError) as caught:
        store.history.messages(1)
    assert (caught.value.kind, caught.value.location) == (StoreFailure.DAMAGED, str(path))
    assert not isinstance(caught.value, sqlite3.Error)


def test_text_that_is_not_utf8_is_a_store_error_and_one_line(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    _session_with_messages(path, 2)
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE messages SET content = CAST(x'ff00fe' AS TEXT) WHERE position = 1")
    raw.close()
    with Store(path) as store, pytest.raises(DatabaseError) as caught:
        # sqlite3 raises it as the row is read (UnicodeDecodeError < 3.12)
        store.history.messages(1)
    assert caught.value.location == str(path)
    result = invoke("sessions", "export", "s", "-o", str(tmp_path / "s.jsonl"), "--db",
                    str(path), code=1)
    assert result.stderr.count("\n") == 1 and str(path) not in result.stdout
    assert not (tmp_path / "s.jsonl").exists()


def test_a_file_another_process_holds_is_busy(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    Store(path).close()
    holder = sqlite3.connect(path)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with Store(path) as store:
            store.db.conn.execute("PRAGMA busy_timeout = 20")  # not the 5 s a person waits
            with pytest.raises(StoreError) as caught:
                store.sessions.create_session("s", "window")
            assert (caught.value.kind, caught.value.location) == (StoreFailure.BUSY, str(path))
            assert store.sessions.find_session("s") is None
    finally:
        holder.close()


# -- PostgreSQL ----------------------------------------------------------------------------


def test_a_dropped_connection_is_a_store_error_naming_the_masked_url(
        pg_url: str, pg_server: PostgresServer) -> None:
    with Store(pg_url) as store:
        session = store.sessions.create_session("s", "window")
        pid = store.db.execute("SELECT pg_backend_pid()").fetchone()[0]
        with pg_server.admin() as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        # A read outside any write connects anew once and goes on (nothing to run twice).
        assert store.history.messages(session.id) == []
        pid = store.db.execute("SELECT pg_backend_pid()").fetchone()[0]
        with pg_server.admin() as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StoreError) as caught, store.write():  # a write, never run twice
            store.db.execute("UPDATE sessions SET name = 't' WHERE id = ?", [session.id])
        assert caught.value.kind is StoreFailure.CONNECTION_LOST
        assert caught.value.location == store.location
        assert store.sessions.find_session("t") is None


def test_a_statement_postgresql_refuses_is_a_database_error_and_one_line(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import typer
    from cli_runner import RUNNER

    from chatmem.cli.output import handles_errors

    with Store(pg_url) as store, pytest.raises(DatabaseError) as caught:
        store.db.execute("SELECT x FROM sessions")
    assert caught.value.kind is StoreFailure.DRIVER
    assert caught.value.location == store.location

    @handles_errors
    def command() -> None:
        with Store(pg_url) as store:
            store.db.execute("SELECT x FROM sessions")

    probe = typer.Typer()
    probe.command()(command)
    result = RUNNER.invoke(probe, [])
    assert result.exit_code == 1
    assert result.stderr == 'error: database error: column "x" does not exist\n'


def test_a_broken_constraint_on_postgresql_is_a_conflict(pg_url: str) -> None:
    with Store(pg_url) as store:
        store.sessions.create_session("s", "window")
        with pytest.raises(StoreConflict), store.write():
            store.db.execute("INSERT INTO sessions (name, strategy, created_at, updated_at)"
                             " VALUES ('s', 'window', '', '')")
        assert [s.name for s in store.sessions.list_sessions()] == ["s"]
