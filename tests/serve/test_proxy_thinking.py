"""A reasoning model behind `chatmem serve` thinks a while before its first word: a streamed
response's status and headers go out once the model answers, and SSE comments keep it
from looking idle meanwhile; what fails after that is an `error` event, as OpenAI's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_server import ChatServer
from waiting import HANG, wait_until

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
import openai as sdk
from test_proxy import RunningProxy, statuses

import chatmem.serve.event_stream
from chatmem.config.settings import Settings


def _settings(chat_server: ChatServer, db_path: Path, **more: float) -> Settings:
    return Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                    db=str(db_path), max_retries=0, **more)  # type: ignore[arg-type]


def test_a_streamed_reply_has_its_headers_while_the_model_thinks(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No byte of the response came until the reply's first word: Node clients (undici waits
    300 s for headers) and proxies (nginx: 60 s without a byte) gave up on a reasoning model
    thinking longer, though it was answering."""
    monkeypatch.setattr(chatmem.serve.event_stream, "KEEPALIVE_S", 0.2)
    chat_server.plan = ["thinking"]
    chat_server.thoughts = ["想一想"]
    chat_server.thinks_until_released = True
    try:
        with RunningProxy(_settings(chat_server, db_path), strategy="window") as running, \
                httpx.stream("POST", f"{running.base_url}/chat/completions", timeout=HANG,
                             headers={"X-Chatmem-Conversation": "想".encode()},
                             json={"model": "test-small", "stream": True,
                                   "messages": [{"role": "user", "content": "为什么天是蓝的？"}]}
                             ) as response:
            # In while the model still thinks: no word of its reply has been sent.
            assert not chat_server.first_delta_sent.is_set()
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["X-Chatmem-Turn"].endswith("@1")
            lines = response.iter_lines()
            before: list[str] = []
            while before.count(": keepalive") < 2:  # comments, no chunk, while it thinks
                before.append(next(lines))
            chat_server.release.set()
            after = list(lines)
    finally:
        chat_server.release.set()
    events = [json.loads(line[6:]) for line in before + after if line.startswith("data: {")]
    # While it thought: OpenAI's first chunk (the role), then comments only.
    assert [line for line in before if line and line != ": keepalive"] == [before[0]]
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(e["choices"][0]["delta"].get("content") or "" for e in events) == \
        "Hello from the test server."
    assert [line for line in after if line][-1] == "data: [DONE]"
    assert statuses(db_path, "想") == ["ok"]


def test_a_failure_after_the_headers_is_an_error_event_an_sdk_raises(
        chat_server: ChatServer, db_path: Path) -> None:
    """Once the headers are out, a model that stops answering (here: silent past the read
    timeout while it thinks) can no longer change the status: the stream ends with an
    `error` event, as OpenAI's and vLLM's do, which the openai SDK raises."""
    chat_server.plan = ["thinking"]
    chat_server.thoughts = ["想一想"]
    chat_server.thinks_until_released = True
    try:
        with RunningProxy(_settings(chat_server, db_path, timeout=1.0),
                          strategy="window") as running:
            client = sdk.OpenAI(base_url=running.base_url, api_key="x", max_retries=0,
                                timeout=HANG)
            answer = client.chat.completions.create(
                model="test-small", stream=True,
                messages=[{"role": "user", "content": "为什么天是蓝的？"}],
                extra_headers={"X-Chatmem-Conversation": "idle"})
            got = []
            with pytest.raises(sdk.APIError) as failed:
                for chunk in answer:
                    got.append(chunk)
    finally:
        chat_server.release.set()
    assert not isinstance(failed.value, sdk.APIStatusError)  # in a 200's stream
    assert [c.choices[0].delta.role for c in got] == ["assistant"]
    error = failed.value.body
    assert isinstance(error, dict) and error["type"] == "api_error"
    assert "did not answer in time" in error["message"], error
    assert chat_server.base_url not in json.dumps(error)
    assert statuses(db_path, "idle") == ["failed"]
    assert len(running.logged) == 1


def test_a_client_that_hangs_up_while_the_model_thinks_cancels_its_turn(
        chat_server: ChatServer, db_path: Path) -> None:
    """Its headers out, the turn no longer waits on the request's own watch: the stream's
    end cancels it, as a hang-up mid-reply does, while the model still sends nothing."""
    chat_server.plan = ["thinking"]
    chat_server.thoughts = ["想一想"]
    chat_server.thinks_until_released = True
    try:
        with RunningProxy(_settings(chat_server, db_path), strategy="window") as running:
            with httpx.stream("POST", f"{running.base_url}/chat/completions", timeout=HANG,
                              headers={"X-Chatmem-Conversation": "bye"},
                              json={"model": "test-small", "stream": True,
                                    "messages": [{"role": "user", "content": "再见"}]}
                              ) as response:
                assert response.status_code == 200
            wait_until(lambda: statuses(db_path, "bye") == ["cancelled"],
                       "the turn is stored as cancelled")
    finally:
        chat_server.release.set()
    assert not chat_server.first_delta_sent.is_set()  # never waited for the model's word
