"""A request's text that is not UTF-8 (a lone surrogate: an emoji's pair a client cut) in
any message, and a failure chatmem does not know, told in the server's log."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings
from chatmem.store import Store


def post(running: RunningProxy, body: dict[str, Any], conversation: str) -> httpx.Response:
    # json.dumps writes a lone surrogate as the escape "\ud83d", as a JavaScript client does.
    return httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                      content=json.dumps(body).encode(),
                      headers={"X-Chatmem-Conversation": conversation.encode(),
                               "Content-Type": "application/json"})


@pytest.mark.parametrize("stream", [False, True])
def test_a_lone_surrogate_in_any_message_or_the_model_is_sent_and_stored_as_a_replacement(
        chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    """Only the last user message was cleaned: one in a system message was a 500 naming the
    strategy, one in an earlier message a bare "UnicodeEncodeError" 500 (the session made
    empty), one in the model name the same, and the server's log said nothing."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    body = {"model": "test-small\ud83d@window", "stream": stream, "messages": [
        {"role": "system", "content": "相关文档：表情 \ud83d"},
        {"role": "user", "content": "你好 \ude00"},
        {"role": "assistant", "content": "好的"},
        {"role": "user", "content": "下一个 \ud83d"}]}
    with RunningProxy(settings) as running:
        answered = post(running, body, "代理")
        assert answered.status_code == 200, answered.text
        if stream:
            assert "data: [DONE]" in answered.text and '"error"' not in answered.text
        else:
            assert answered.json()["model"] == "test-small\ufffd@window"
        assert running.logged == []
    sent = chat_server.requests[-1]
    assert sent["model"] == "test-small\ufffd"
    assert [m["content"] for m in sent["messages"]] == [
        "相关文档：表情 \ufffd", "你好 \ufffd", "好的", "下一个 \ufffd"]
    with Store(db_path) as store:
        said = [m.content for m in
                store.history.messages(store.sessions.session("代理").id)]
    assert said[:3] == ["你好 \ufffd", "好的", "下一个 \ufffd"]


def test_a_failure_chatmem_does_not_know_is_one_line_in_the_log_saying_where(
        tmp_path: Path) -> None:
    """A client is told only "chatmem could not take this turn (TypeError)"; the one who
    runs the server learnt nothing at all. Here: a session's params edited by hand into a
    JSON list."""
    db = tmp_path / "h.db"
    settings = Settings(provider="scripted", db=str(db))
    hi = {"messages": [{"role": "user", "content": "你好"}]}
    with RunningProxy(settings) as running:
        assert post(running, hi, "旅行").status_code == 200
    with sqlite3.connect(db) as edited:
        edited.execute("UPDATE sessions SET params = '[1]'")
    with RunningProxy(settings) as running:
        failed = post(running, hi, "旅行")
        logged = running.logged
    assert failed.status_code == 500
    assert failed.json()["error"]["message"] == "chatmem could not take this turn (TypeError)"
    [line] = logged
    assert line.startswith("旅行: chatmem could not take this turn: TypeError: ")
    assert "\n" not in line and line.endswith(")") and " (at " in line and ".py:" in line
