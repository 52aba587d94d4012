"""Through `chatmem serve`: a reasoning model's request fields and its replies that carry no
text (a refusal, a cap spent thinking, a content filter)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from openai import OpenAI
from test_proxy import RunningProxy

from chatmem.config.settings import Settings
from chatmem.store import Store


@pytest.fixture
def proxy(chat_server: ChatServer, db_path: Path) -> Iterator[RunningProxy]:
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="o4-mini",
                        db=str(db_path), max_retries=0)
    with RunningProxy(settings, strategy="window") as running:
        yield running


def client(proxy: RunningProxy) -> OpenAI:
    return OpenAI(base_url=proxy.base_url, api_key="unused", max_retries=0, timeout=HANG)


def post(proxy: RunningProxy, conversation: str, **fields: Any) -> httpx.Response:
    return httpx.post(f"{proxy.base_url}/chat/completions", timeout=HANG,
                      headers={"X-Chatmem-Conversation": conversation},
                      json={"model": "o4-mini", "messages": [
                          {"role": "user", "content": "你好"}], **fields})


def test_a_reasoning_model_that_refuses_max_tokens_answers(
        proxy: RunningProxy, chat_server: ChatServer) -> None:
    """OpenAI's o1/o3/o4-mini/gpt-5 answer max_tokens with a 400: every request was a 502."""
    chat_server.refuses = "max_tokens"
    answer = client(proxy).chat.completions.create(
        model="o4-mini", messages=[{"role": "user", "content": "hi"}],
        max_completion_tokens=2, extra_headers={"X-Chatmem-Conversation": "o4"})
    assert answer.choices[0].message.content == "Hello from"
    assert answer.choices[0].finish_reason == "length"
    assert chat_server.requests[-1].get("max_completion_tokens") == 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(("mode", "content", "finish"), [
    ("refusal", "I'm sorry, I can't help with that.", "stop"),
    ("thought-to-the-cap", "", "length"),
    ("filtered-empty", "", "content_filter"),
    ("filtered", "Hello from the test server.", "content_filter"),
])
def test_a_reply_without_text_or_cut_short_is_answered_with_why_it_ended(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path, stream: bool,
        mode: str, content: str, finish: str) -> None:
    """A refusal and a cap spent thinking were a 502 ("the upstream model failed", which the
    SDK retries three times); a filtered reply ended "stop"."""
    chat_server.plan = [mode]
    openai = client(proxy)
    ask = {"model": "o4-mini", "messages": [{"role": "user", "content": "想一想"}],
           "extra_headers": {"X-Chatmem-Conversation": f"{mode}-{stream}"}}
    if stream:
        chunks = [c for c in openai.chat.completions.create(stream=True, **ask) if c.choices]
        said = "".join(c.choices[0].delta.content or "" for c in chunks)
        ended = [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason]
    else:
        answer = openai.chat.completions.create(**ask)
        said, ended = answer.choices[0].message.content or "", [answer.choices[0].finish_reason]
    assert (said, ended) == (content, [finish])
    with Store(db_path) as store:
        stored = store.history.messages(store.sessions.session(f"{mode}-{stream}").id)
    assert [m.content for m in stored] == ["想一想", content]
