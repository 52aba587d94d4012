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
