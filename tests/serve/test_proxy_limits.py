"""What `chatmem serve` refuses before it reads, parses or counts a request whole: a body
larger than any model's context holds, and a message that cannot fit the budget."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy, statuses

from chatmem.config.settings import Settings
from chatmem.serve.requests import MAX_BODY_BYTES


@pytest.fixture
def settings(chat_server: ChatServer, db_path: Path) -> Settings:
    return Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                    db=str(db_path), context_budget=1000)


def test_a_body_larger_than_any_context_is_refused_before_it_is_read(
        settings: Settings, chat_server: ChatServer, db_path: Path) -> None:
    """A 60 MB body was read whole, parsed and tokenized: 52 s and 2.4 GB before its 400."""
    body = json.dumps({"model": "test-small", "messages": [
        {"role": "user", "content": "中文" * (MAX_BODY_BYTES // 4)}]}, ensure_ascii=False)
    sent = body.encode()
    assert len(sent) > MAX_BODY_BYTES

    def chunked() -> Iterator[bytes]:  # no Content-Length: found while it streams in
        for start in range(0, len(sent), 2**20):
            yield sent[start:start + 2**20]

    with RunningProxy(settings) as running:
        for content in (sent, chunked()):
            answer = httpx.post(f"{running.base_url}/chat/completions", content=content,
                                timeout=HANG, headers={"X-Chatmem-Conversation": "big"})
            assert answer.status_code == 413, answer.text
            assert answer.json()["error"]["param"] == "messages"
        # The server goes on answering, on the same port.
        assert httpx.get(f"{running.base_url}/models", timeout=HANG).status_code == 200
    assert chat_server.requests == [] and statuses(db_path, "big") is None


def test_a_message_too_long_for_the_budget_is_refused_without_waiting_for_the_conversation(
        settings: Settings, chat_server: ChatServer, db_path: Path) -> None:
    """Its tokens were counted (seconds for megabytes) inside the conversation's turn, so
    it waited for the turn under way before it was refused: now its bytes alone say it
    cannot fit, and it is refused at once, while the model still holds the other reply."""
    chat_server.plan = ["slow"]
    headers = {"X-Chatmem-Conversation": "长文"}

    with RunningProxy(settings) as running:
        url = f"{running.base_url}/chat/completions"
        held = threading.Thread(target=lambda: httpx.post(url, timeout=HANG, json={
            "model": "test-small", "messages": [{"role": "user", "content": "讲个故事"}]},
            headers={k: v.encode() for k, v in headers.items()}))
        held.start()
        try:
            assert chat_server.first_delta_sent.wait(HANG)
            answer = httpx.post(url, timeout=HANG, json={
                "model": "test-small", "stream": True,
                "messages": [{"role": "system", "content": "简短回答。"},
                             {"role": "user", "content": "长" * 90_000}]},
                headers={k: v.encode() for k, v in headers.items()})
            # Answered while the held turn is under way, not once it has ended (stored).
            assert statuses(db_path, "长文") in (None, [])
        finally:
            chat_server.release.set()
            held.join(HANG)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "messages" and "1,000" in error["message"]
    assert len(chat_server.requests) == 1  # only the held one reached the model
    assert statuses(db_path, "长文") == ["ok"]
