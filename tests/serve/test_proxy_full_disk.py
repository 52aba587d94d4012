"""`chatmem serve` on a full disk: once a request found the history's disk full, the next are
not sent to the model (paid for, then not stored) until there is room, as a chat's turns."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from cli_runner import chat
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy, statuses

import chatmem.store.sqlite_opening as connection
from chatmem.config.settings import Settings


def test_after_a_full_disk_the_next_requests_are_not_sent_to_the_model(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed request closes its conversation and the next opens it anew: the connection
    that had found the disk full was gone, so every request paid the model and lost its
    reply ('the turn was not stored'), each as the first."""
    assert chat(db_path, "before", "first turn\n").exit_code == 0
    opened = connection.connect

    def at_its_limit(path: str | Path, key: str | None = None, **how: Any) -> sqlite3.Connection:
        conn = opened(path, key, **how)  # the disk full: not one page more
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
        return conn

    monkeypatch.setattr(connection, "connect", at_its_limit)
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    big = "夏天我们去杭州 and a long line that needs new pages " * 120
    answers = []
    with RunningProxy(settings, strategy="window") as running:
        for text in (big, f"第二个问题 {big}", f"third question {big}"):
            answers.append(httpx.post(
                f"{running.base_url}/chat/completions", timeout=HANG,
                headers={"X-Chatmem-Conversation": "full"},
                json={"model": "test-small", "messages": [{"role": "user", "content": text}]}))
    errors = [answer.json()["error"]["message"] for answer in answers]
    assert [a.status_code for a in answers] == [500, 500, 500], errors
    assert "the disk is full or failing; nothing was changed" in errors[0]
    # The client is not told where the server keeps its history.
    assert errors[1:] == ["nothing was sent: the history: the disk is still full (free some"
                          " space and try again)"] * 2
    assert len(chat_server.requests) == 1  # the model was asked once, by the first
    # The server's owner, who alone can make room, is told which file, in its log.
    assert running.logged == [f"full: {e.replace('the history', str(db_path), 1)}"
                              for e in errors], running.logged
    monkeypatch.undo()
    with sqlite3.connect(db_path) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert statuses(db_path, "before") == ["ok"]  # what was stored is there
    assert statuses(db_path, "full") in (None, [])  # and nothing of the failed requests
    assert chat(db_path, "before", "the disk was freed\n").exit_code == 0
