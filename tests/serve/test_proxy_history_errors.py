"""A history the proxy cannot use (the one a client's token names): the client reads what
happened, in one line, and not where the history lives on the server."""

from __future__ import annotations

from pathlib import Path

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings

TOKEN = "t" * 24
ASKED = {"model": "test-small", "messages": [{"role": "user", "content": "你好"}]}


def serving(chat_server: ChatServer, tmp_path: Path, history: Path) -> RunningProxy:
    """The proxy over a history of its own, a client's token naming `history`."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(tmp_path / "own.db"))
    return RunningProxy(settings, tokens={TOKEN: str(history)})


def test_a_history_that_is_not_chatmems_is_named_without_its_path(
        chat_server: ChatServer, tmp_path: Path, foreign_history: Path) -> None:
    db = foreign_history
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with serving(chat_server, tmp_path, db) as running:
        answers = [
            httpx.post(f"{running.base_url}/chat/completions", json=ASKED, headers=auth,
                       timeout=HANG),
            httpx.post(f"{running.base_url}/chat/completions", json={**ASKED, "stream": True},
                       headers=auth, timeout=HANG),
            httpx.get(f"{running.base_url}/chatmem/turns/旅行@1", headers=auth, timeout=HANG)]
    for answer in answers:
        assert answer.status_code == 500, answer.text
        error = answer.json()["error"]
        assert error["message"] == \
            "the history is not a chatmem database (it has other tables)", error
        assert error["type"] == "api_error"
        assert str(tmp_path) not in answer.text and "记录.db" not in answer.text


def test_a_missing_history_is_named_without_its_path(chat_server: ChatServer,
                                                      tmp_path: Path) -> None:
    with serving(chat_server, tmp_path, tmp_path / "服务器" / "记录.db") as running:
        answer = httpx.get(f"{running.base_url}/chatmem/turns/旅行@1", timeout=HANG,
                           headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 404, answer.text
    assert answer.json()["error"]["message"] == \
        "no history file (chat, ask SESSION and sessions import create it)"
    assert str(tmp_path) not in answer.text


def test_a_history_file_deleted_under_the_server_is_said_once_in_its_log(
        tmp_path: Path) -> None:
    """The history file deleted while serve ran: the next request went on in a new, empty
    file at that path (its conversation's memory begun again, turn 1 anew), and nothing said
    so to the one running the server. Its log says it once; a file made by the server's
    first request, or there from the start, is said nothing of."""
    from urllib.parse import quote

    db = tmp_path / "h.db"

    def ask(running: RunningProxy, text: str) -> str:
        answered = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG, json={
            "model": "scripted", "messages": [{"role": "user", "content": text}]},
            headers={"X-Chatmem-Conversation": quote("旅行")})
        assert answered.status_code == 200, answered.text
        return answered.headers["x-chatmem-turn"]

    with RunningProxy(Settings(provider="scripted", db=str(db))) as running:
        turns = [ask(running, "你好")]
        for part in tmp_path.glob("h.db*"):
            part.unlink()
        turns += [ask(running, "第二"), ask(running, "第三")]
        logged = list(running.logged)
    with RunningProxy(Settings(provider="scripted", db=str(db))) as running:
        turns.append(ask(running, "第四"))
        logged += running.logged
    assert turns == [quote(t, safe="@") for t in ("旅行@1", "旅行@1", "旅行@2", "旅行@3")]
    [line] = logged
    assert line.startswith(f"{db} was deleted while serving") and "new, empty" in line
