"""`chatmem serve` on a full disk: the reply of the request that found the history's disk
full is answered, marked not stored; the next are not sent to the model (paid for, then not
stored) until there is room, as a chat's turns."""

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
from test_proxy import RunningProxy, client, statuses

import chatmem.store.sqlite_opening as connection
from chatmem.config.settings import Settings


def _full_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection opened from now on finds the disk full: not one page more."""
    opened = connection.connect

    def at_its_limit(path: str | Path, key: str | None = None, **how: Any) -> sqlite3.Connection:
        conn = opened(path, key, **how)
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
        return conn

    monkeypatch.setattr(connection, "connect", at_its_limit)


def test_a_streamed_reply_paid_for_and_not_stored_ends_as_a_reply_saying_so(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Leftover: a reply the model completed that the history could not store was a 500 (an
    error chunk, streamed): the client's SDK raised, and a retry paid for the reply again.
    OpenAI's own client reads it as a reply; the field it ignores says it is not stored."""
    assert chat(db_path, "before", "first turn\n").exit_code == 0
    _full_at_once(monkeypatch)
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    big = "夏天我们去杭州 and a long line that needs new pages " * 120
    with RunningProxy(settings, strategy="window") as running:
        raw = client(running).chat.completions.with_raw_response.create(
            model="test-small", stream=True, messages=[{"role": "user", "content": big}],
            extra_headers={"X-Chatmem-Conversation": "full"})
        chunks = list(raw.parse())
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == (
        "Hello from the test server.")
    assert chunks[-1].choices[0].finish_reason == "stop"
    said = (chunks[-1].model_extra or {})["chatmem"]
    assert (said["turn"], said["status"]) == (None, "not-stored")
    assert "the disk is full or failing" in said["warning"]
    assert running.logged[0].startswith(
        f"full: the client has the reply all the same; the turn was not stored: {db_path}")
    assert len(chat_server.requests) == 1
    monkeypatch.undo()
    assert statuses(db_path, "full") in (None, [])


def test_after_a_full_disk_the_next_requests_are_not_sent_to_the_model(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed request closes its conversation and the next opens it anew: the connection
    that had found the disk full was gone, so every request paid the model and lost its
    reply ('the turn was not stored'), each as the first."""
    assert chat(db_path, "before", "first turn\n").exit_code == 0
    _full_at_once(monkeypatch)
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
    assert [a.status_code for a in answers] == [200, 500, 500], [a.text for a in answers]
    # The first reply was paid for: answered with it, saying it is not stored (a 500 had the
    # client retry and pay again, its reply lost), and no turn named.
    first = answers[0].json()
    assert first["choices"][0]["message"]["content"] == "Hello from the test server."
    assert (first["chatmem"]["turn"], first["chatmem"]["status"]) == (None, "not-stored")
    warning = first["chatmem"]["warning"]
    assert "the disk is full or failing; nothing was changed" in warning
    assert answers[0].headers["X-Chatmem-Stored-As"] == "not-stored"
    assert "X-Chatmem-Turn" not in answers[0].headers
    errors = [answer.json()["error"]["message"] for answer in answers[1:]]
    # The client is not told where the server keeps its history.
    assert errors == ["nothing was sent: the history: the disk is still full (free some"
                      " space and try again)"] * 2
    assert len(chat_server.requests) == 1  # the model was asked once, by the first
    # The server's owner, who alone can make room, is told which file, in its log.
    assert running.logged == [
        "full: the client has the reply all the same; "
        + warning.replace("the history", str(db_path), 1),
        *(f"full: {e.replace('the history', str(db_path), 1)}" for e in errors)
    ], running.logged
    monkeypatch.undo()
    with sqlite3.connect(db_path) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert statuses(db_path, "before") == ["ok"]  # what was stored is there
    assert statuses(db_path, "full") in (None, [])  # and nothing of the failed requests
    assert chat(db_path, "before", "the disk was freed\n").exit_code == 0
