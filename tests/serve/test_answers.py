"""The usage `chatmem serve` answers with: the model's own, else chatmem's count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings
from chatmem.tokens import counter_for_model

REPLY = ["你好", "，", "我是", "模型", "。"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_the_model_gave_no_usage_for_is_counted_not_zero(
        chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    """completion_tokens was 0 when the model streamed no usage, while prompt_tokens fell
    back to chatmem's estimate; with usage, the model's own numbers are kept."""
    chat_server.reply_words = REPLY
    chat_server.plan = ["no-usage", "ok"]
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    usages = []
    with RunningProxy(settings) as running:
        for question in ("你好", "再说一遍"):
            answer = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG, json={
                "model": "test-small", "stream": stream, "user": "ann",
                "stream_options": {"include_usage": True} if stream else None,
                "messages": [{"role": "user", "content": question}]})
            assert answer.status_code == 200, answer.text
            if stream:
                chunks = [json.loads(line.removeprefix("data: "))
                          for line in answer.text.splitlines()
                          if line.startswith("data: {")]
                usages.append(chunks[-1]["usage"])
            else:
                usages.append(answer.json()["usage"])
    counted = counter_for_model("test-small").count_text("".join(REPLY))
    estimated, told = usages
    assert counted > 0 and estimated["completion_tokens"] == counted
    assert estimated["total_tokens"] == estimated["prompt_tokens"] + counted
    assert told["completion_tokens"] == len(REPLY)  # the model's number, when it says one


def test_a_request_that_gives_up_on_the_write_lock_is_a_503_with_retry_after(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process's long write (an import) held the lock past the wait: the request was
    a 500 api_error, which an SDK does not retry; a 503 with Retry-After it does."""
    import sqlite3

    from chatmem.store import sqlite_backend

    # The waits shortened so the test does not sit through them; the lock is a real one.
    monkeypatch.setattr(sqlite_backend, "WRITE_WAIT_S", 1)
    monkeypatch.setattr(sqlite_backend.SqliteBackend, "busy_timeout_ms", 200)
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings) as running:
        url = f"{running.base_url}/chat/completions"
        asked = {"model": "test-small", "messages": [{"role": "user", "content": "你好"}]}
        assert httpx.post(url, timeout=HANG, json=asked,
                          headers={"X-Chatmem-Conversation": "s0"}).status_code == 200
        holder = sqlite3.connect(db_path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            for conversation in ("s0", "新的"):
                busy = httpx.post(url, timeout=HANG, json=asked,
                                  headers={"X-Chatmem-Conversation": conversation.encode()})
                assert busy.status_code == 503, busy.text
                assert busy.headers["retry-after"].isdigit()
                assert busy.json()["error"]["type"] == "api_error"
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert httpx.post(url, timeout=HANG, json=asked,
                          headers={"X-Chatmem-Conversation": "s0"}).status_code == 200
