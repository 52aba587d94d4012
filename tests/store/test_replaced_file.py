"""A history file replaced (a backup restored) under an open connection: the connection is
let go as soon as it sees it, and the file now at the path is left as it was restored, not
given the old file's write-ahead log."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from chatmem.errors import StoreError, StoreFailure
from chatmem.store import Store


def sessions_in(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return [r[0] for r in conn.execute("SELECT name FROM sessions ORDER BY id")]
    finally:
        conn.close()


def restore(backup: Path, path: Path) -> None:
    """As an operator restores: a copy renamed over the live file, its -wal left beside it."""
    shutil.copy(backup, path.with_name("incoming"))
    path.with_name("incoming").replace(path)


def test_a_restored_file_does_not_get_the_replaced_files_log(tmp_path: Path) -> None:
    path, backup = tmp_path / "历史.db", tmp_path / "backup.db"
    with Store(path) as store:
        store.sessions.create_session("旅行", "window")
        store.db.fold_log()
        shutil.copy(path, backup)
        store.sessions.create_session("不在备份里", "window")
        assert Path(f"{path}-wal").stat().st_size > 0
        restore(backup, path)
        assert store.moved()
        with pytest.raises(StoreError) as refused:
            store.check_writable()
        assert refused.value.kind is StoreFailure.REPLACED
        with pytest.raises(StoreError) as read:
            store.sessions.session("旅行")
        assert read.value.kind is StoreFailure.REPLACED
    assert sessions_in(path) == ["旅行"]
    with Store(path) as reopened:
        assert [s.name for s in reopened.sessions.list_sessions()] == ["旅行"]


def test_a_log_another_connection_wrote_since_is_left_alone(tmp_path: Path) -> None:
    """The log no longer as this connection left it: someone else's pages may be in it."""
    path, backup = tmp_path / "h.db", tmp_path / "backup.db"
    with Store(path) as store, Store(path) as other:
        store.sessions.create_session("one", "window")
        store.db.fold_log()
        shutil.copy(path, backup)
        other.sessions.create_session("two-by-the-other", "window")
        restore(backup, path)
        before = Path(f"{path}-wal").stat().st_size
        assert store.moved()
        assert Path(f"{path}-wal").stat().st_size == before
