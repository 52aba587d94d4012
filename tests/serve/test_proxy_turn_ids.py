"""The turn id `chatmem serve` answers with (`X-Chatmem-Turn`, the body's `chatmem.turn`) is
the conversation's turn, the one `GET /v1/chatmem/turns/ID@N` and `chatmem inspect` find,
whatever failed, was cancelled or was replaced before it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings

CONVERSATION = "重来"


def ask(running: RunningProxy, messages: list[dict[str, str]], *,
        stream: bool = False) -> tuple[int, str, str, str]:
    """The status, the header's turn id (percent-encoded), the body's and the reply of one
    request."""
    answer = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                        headers={"X-Chatmem-Conversation": quote(CONVERSATION)},
                        json={"model": "test-small", "messages": messages, "stream": stream})
    if answer.status_code != 200:
        return answer.status_code, "", "", ""
    header = answer.headers["X-Chatmem-Turn"]
    if stream:
        chunks = [json.loads(line[6:]) for line in answer.text.splitlines()
                  if line.startswith("data: {")]
        said = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
        return 200, header, chunks[-1]["chatmem"]["turn"], said
    body = answer.json()
    return 200, header, body["chatmem"]["turn"], body["choices"][0]["message"]["content"]


def served_turn(running: RunningProxy, turn_id: str) -> dict[str, Any]:
    answer = httpx.get(f"{running.base_url}/chatmem/turns/{turn_id}", timeout=HANG)
    assert answer.status_code == 200, (turn_id, answer.text)
    turn: dict[str, Any] = answer.json()["turn"]
    return turn


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_turn_after_a_failed_and_a_replaced_request_is_named_by_its_own_number(
        chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    """A failed request and a regenerate made the id the request's number (rg@3 for a
    regenerate of turn 2), which fetched another turn, or none."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="window") as running:
        history = [{"role": "user", "content": "第一"}]
        _, header, body, reply = ask(running, history, stream=stream)
        assert (header, body) == (f"{quote(CONVERSATION)}@1", f"{CONVERSATION}@1")
        history += [{"role": "assistant", "content": reply},
                    {"role": "user", "content": "第二"}]
        chat_server.plan = ["401"]
        assert ask(running, history, stream=stream)[0] != 200  # a failed request
        chat_server.reply_words = ["第一个回答"]
        _, header, body, _ = ask(running, history, stream=stream)
        assert (header, body) == (f"{quote(CONVERSATION)}@2", f"{CONVERSATION}@2")
        chat_server.reply_words = ["重新回答"]
        _, header, body, reply = ask(running, history, stream=stream)  # a regenerate
        assert (header, body) == (f"{quote(CONVERSATION)}@2", f"{CONVERSATION}@2")
        assert served_turn(running, body)["reply"] == "重新回答"
        history += [{"role": "assistant", "content": reply},
                    {"role": "user", "content": "第三"}]
        _, header, body, _ = ask(running, history, stream=stream)
        assert (header, body) == (f"{quote(CONVERSATION)}@3", f"{CONVERSATION}@3")
        third = served_turn(running, body)
        assert third["input"] == "第三"
