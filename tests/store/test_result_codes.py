"""SQLite errors are told apart by their result code, for sqlite3 and SQLCipher alike."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chatmem.errors import NotChatmemDatabase, StoreError, StoreFailure
from chatmem.store import Store, cipher
from chatmem.store.result_codes import BUSY, NOT_A_DATABASE, primary_code


def error_of(conn: sqlite3.Connection, sql: str) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as caught:
        conn.execute(sql)
    return caught.value


def test_real_errors_carry_their_primary_code(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    Store(path).close()
    holder = sqlite3.connect(path)
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, timeout=0)
    try:
        assert primary_code(error_of(other, "BEGIN IMMEDIATE")) in BUSY
    finally:
        holder.rollback()
        holder.close()
        other.close()
    readonly = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        error = error_of(readonly, "DELETE FROM sessions")
        assert primary_code(error) == sqlite3.SQLITE_READONLY
    finally:
        readonly.close()
    text = tmp_path / "notes.db"
    text.write_text("这不是数据库 " * 200, encoding="utf-8")
    conn = sqlite3.connect(text)
    try:
        assert primary_code(error_of(conn, "SELECT * FROM sqlite_master")) in NOT_A_DATABASE
    finally:
        conn.close()
    assert primary_code(ValueError("database is locked")) is None  # words alone say nothing


def test_the_store_words_each_kind_by_its_code(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with Store(path) as store:
        busy = sqlite3.OperationalError("no such words here")
        busy.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
        assert str(store.db.write_error(busy)).endswith("is busy: another process held it for "
                                                     "over 5 s; try again")
        assert store.db.write_error(busy).kind is StoreFailure.BUSY
        full = sqlite3.OperationalError("database or disk is full")
        full.sqlite_errorcode = 13  # type: ignore[attr-defined]
        assert store.db.write_error(full).kind is StoreFailure.DISK
        read_only = sqlite3.OperationalError("no such words here")
        read_only.sqlite_errorcode = sqlite3.SQLITE_READONLY  # type: ignore[attr-defined]
        assert store.db.write_error(read_only).kind is StoreFailure.READ_ONLY
        worded = sqlite3.OperationalError("database is locked")  # no code: not classified
        unclassified = store.db.write_error(worded)
        assert unclassified.kind is StoreFailure.DRIVER
        assert str(unclassified) == f"{path}: database is locked"  # SQLite's own words, passed on
    text = tmp_path / "notes.db"
    text.write_bytes(b"not sqlite " * 200)
    with pytest.raises(NotChatmemDatabase):
        Store(text)


@pytest.mark.skipif(not cipher.available(), reason="chatmem[encrypt] (sqlcipher3) is not installed")
def test_sqlcipher_errors_keep_their_code_through_translation(tmp_path: Path) -> None:
    text = tmp_path / "notes.db"
    text.write_bytes(b"not sqlite " * 200)
    raw = cipher.driver().connect(str(text))
    try:
        with pytest.raises(cipher.driver().DatabaseError) as caught:
            raw.execute("SELECT * FROM sqlite_master")
    finally:
        raw.close()
    translated = cipher.translate(caught.value)
    assert isinstance(translated, sqlite3.DatabaseError)
    assert primary_code(translated) == sqlite3.SQLITE_NOTADB


def test_a_file_replaced_while_open_says_so_not_to_check_permissions(tmp_path: Path) -> None:
    """While `encrypt` converts a history (its journal in memory), a command waiting on it
    then writes to a file renamed over: SQLite says read-only (DBMOVED), the permissions
    are fine, and running the command again is what helps."""
    path, other = tmp_path / "历史.db", tmp_path / "converted.db"
    for made in (path, other):
        conn = sqlite3.connect(made)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
    waiting = sqlite3.connect(path)
    try:
        waiting.execute("SELECT * FROM t").fetchall()
        other.replace(path)
        error = error_of(waiting, "INSERT INTO t VALUES ('写')")
    finally:
        waiting.close()
    assert primary_code(error) == sqlite3.SQLITE_READONLY
    with Store(tmp_path / "h.db") as store:
        said = store.db.write_error(error)
    assert said.kind is StoreFailure.REPLACED
    assert "was replaced while this command had it open" in str(said)
    assert "permissions" not in str(said)


def test_a_turn_on_a_history_file_that_left_its_path_is_refused_in_one_line(
        tmp_path: Path) -> None:
    db_path = tmp_path / "历史.db"
    with Store(db_path) as store:
        store.sessions.create_session("s", "window")
        store.check_writable()
        db_path.rename(db_path.with_name("moved.db"))
        assert store.moved()
        with pytest.raises(StoreError) as refused:
            store.check_writable()
    assert refused.value.kind is StoreFailure.REPLACED
    assert "was deleted or replaced while this command had it open" in str(refused.value)
