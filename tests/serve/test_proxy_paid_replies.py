"""A reply the model completed (paid for) that chatmem itself then failed to store: answered
all the same, marked not stored, the failure in the server's log; never a 500 an SDK asks
again (and pays again) for."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from openai import OpenAI
from test_proxy import RunningProxy, statuses

from chatmem.config.settings import Settings
from chatmem.store.turns import TurnTables


def _storing_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault of chatmem's own (not the history's) as the completed reply is stored."""
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug of chatmem's")

    monkeypatch.setattr(TurnTables, "commit_turn", broken)


PAID = {"prompt_tokens": 321, "completion_tokens": 5, "total_tokens": 326}


@pytest.mark.parametrize("stream", [False, True])
def test_chatmems_own_failure_after_a_paid_reply_answers_it_once_not_stored(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch,
        stream: bool) -> None:
    """Leftover: the reply was paid for, then a fault of chatmem's (not a StoreError) was a
    500 without x-should-retry: the openai SDK asked twice more, the model paid three times,
    and the client never had the reply. And a reply answered not stored had no usage."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    _storing_fails(monkeypatch)
    chat_server.usage = PAID
    with RunningProxy(settings, strategy="window") as running:
        # The SDK's default: it retries a 5xx twice unless told not to.
        openai = OpenAI(base_url=running.base_url, api_key="unused", timeout=HANG)
        asked = {"model": "test-small", "extra_headers": {"X-Chatmem-Conversation": quote("付费")},
                 "messages": [{"role": "user", "content": "夏天我们去杭州吧"}]}
        if stream:
            *chunks, counted = openai.chat.completions.create(
                stream=True, stream_options={"include_usage": True}, **asked)
            reply = "".join(c.choices[0].delta.content or "" for c in chunks)
            said = (chunks[-1].model_extra or {})["chatmem"]
            assert chunks[-1].choices[0].finish_reason == "stop"
            assert counted.choices == []
            usage = counted.usage
        else:
            answer = openai.chat.completions.create(**asked)
            reply = answer.choices[0].message.content or ""
            said = (answer.model_extra or {})["chatmem"]
            usage = answer.usage
        logged = running.logged
    assert reply == "Hello from the test server."
    # What the model said it used, as for a stored reply (a client adding them up, or
    # reading `usage.total_tokens`, found none).
    assert usage is not None and usage.model_dump(exclude_none=True) == PAID
    assert (said["turn"], said["status"]) == (None, "not-stored")
    assert "RuntimeError" in said["warning"]
    assert len(chat_server.requests) == 1  # paid for once
    [line] = logged  # its owner hears what failed, and where
    assert line.startswith("付费: the client has the reply all the same; ")
    assert "RuntimeError: a bug of chatmem's (at test_proxy_paid_replies.py:" in line
    monkeypatch.undo()
    assert statuses(db_path, "付费") in (None, [], ["failed"])


@pytest.mark.parametrize("stream", [False, True])
def test_a_failure_noting_a_stored_turn_answers_it_stored_once(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch,
        stream: bool) -> None:
    """Leftover: once the engine had stored the paid reply, a fault of chatmem's in serve's
    own note of it (the stored() callback) was a 500: the openai SDK asked twice more, the
    model paid three times, the history held the turn three times, and the client never had
    the reply. It is answered, stored, its memory updated; the fault in the owner's log."""
    from chatmem.serve.conversations import ServedConversations

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug of chatmem's")

    monkeypatch.setattr(ServedConversations, "note_answered", broken)
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    with RunningProxy(settings, strategy="window") as running:
        # The SDK's default: it retries a 5xx twice unless told not to.
        openai = OpenAI(base_url=running.base_url, api_key="unused", timeout=HANG)
        asked = {"model": "test-small", "extra_headers": {"X-Chatmem-Conversation": quote("记下")},
                 "messages": [{"role": "user", "content": "夏天我们去杭州吧"}]}
        if stream:
            chunks = list(openai.chat.completions.create(stream=True, **asked))
            reply = "".join(c.choices[0].delta.content or "" for c in chunks)
            said = (chunks[-1].model_extra or {})["chatmem"]
        else:
            answer = openai.chat.completions.create(**asked)
            reply = answer.choices[0].message.content or ""
            said = (answer.model_extra or {})["chatmem"]
        logged = running.logged
    assert reply == "Hello from the test server."
    assert (said["turn"], said["status"]) == ("记下@1", "ok")
    assert len(chat_server.requests) == 1  # paid for once
    [line] = logged
    assert line.startswith("记下: stored and answered")
    assert "RuntimeError: a bug of chatmem's" in line
    monkeypatch.undo()
    assert statuses(db_path, "记下") == ["ok"]  # stored once
