"""Opening a history file another account could write, or put a file of theirs in place of:
the config file is refused for it (chatmem.config.trust); the history is told."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chatmem.app.history_opening import open_history
from chatmem.config.settings import Settings
from chatmem.history_notices import HistoryWritableByOthers
from chatmem.notices import Notice
from chatmem.render.notices import notice_text

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="no owners (Windows)")


def opened(path: Path) -> list[Notice]:
    told: list[Notice] = []
    store, _, _ = open_history(Settings(db=str(path)), create=True, one_off=False,
                               ask_key=None, tell=told.append, pool=None)
    store.close()
    return [n for n in told if isinstance(n, HistoryWritableByOthers)]


@pytest.mark.parametrize("folder", ["history", "历史"])
def test_a_history_others_can_write_is_told_once(tmp_path: Path, folder: str) -> None:
    home = tmp_path / folder
    home.mkdir(mode=0o700)
    path = home / "聊天.db"
    assert opened(path) == []  # created 0600 in a folder of the user's own
    path.chmod(0o666)
    (told,) = opened(path)
    assert (told.path, told.mode) == (path, 0o666)
    line = notice_text(told, repl_hints=False)
    assert str(path) in line and "chmod go-w" in line and "0666" in line
    path.chmod(0o600)
    home.chmod(0o777)  # not sticky: another account may rename theirs in its place
    (told,) = opened(path)
    assert told.mode is None and str(home) in told.problem
    assert f"chmod go-w {home}" in notice_text(told, repl_hints=False)
    home.chmod(0o1777)  # sticky, as /tmp: only the owner may replace it
    assert opened(path) == []
    path.chmod(0o666)  # told once in a process (a server opens it for every request)
    assert opened(path) == []


def test_a_client_is_not_told_where_the_servers_history_is(tmp_path: Path) -> None:
    from chatmem.render.client_notices import client_notice_text
    from chatmem.render.errors import Client

    path = tmp_path / "服务" / "h.db"
    told = HistoryWritableByOthers(path, mode=0o666, fix=f"chmod go-w {path}")
    for client in Client:
        line = client_notice_text(told, client)
        assert str(path) not in line and "服务" not in line and "history" in line


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="only root gives a file to another account")
def test_a_history_another_account_owns_is_told(tmp_path: Path) -> None:
    # Its owner reads every message and may chmod it at will, whatever its mode says now:
    # root's chat in a file of uid 4242's (sudo keeping HOME) went there unsaid.
    home = tmp_path / "历史"
    home.mkdir(mode=0o700)
    path = home / "聊天.db"
    assert opened(path) == []
    os.chown(path, 4242, 4242)
    (told,) = opened(path)
    assert (told.path, told.owner, told.mode) == (path, 4242, None)
    line = notice_text(told, repl_hints=False)
    assert str(path) in line and "4242" in line and "chown 0:" in line


def test_a_wal_or_shm_others_can_write_or_own_is_told(tmp_path: Path) -> None:
    # The -wal holds the newest pages of the history and the -shm its index: a 0600 file
    # beside a 0666 -wal (left from before a chmod go-w while a chat ran) is as open.
    import sqlite3

    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    path = home / "对话.db"
    assert opened(path) == []
    holder = sqlite3.connect(path)  # a chat running: its -wal and -shm stay
    try:
        holder.execute("PRAGMA journal_mode=wal")
        holder.execute("CREATE TABLE IF NOT EXISTS held (x)")
        holder.commit()
        wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
        assert wal.exists() and shm.exists()
        wal.chmod(0o666)
        (told,) = opened(path)
        assert (told.path, told.mode) == (wal, 0o666)
        wal.chmod(0o600)
        shm.chmod(0o646)
        (told,) = opened(path)
        assert (told.path, told.mode) == (shm, 0o646)
        shm.chmod(0o600)
        assert opened(path) == []
    finally:
        holder.close()
