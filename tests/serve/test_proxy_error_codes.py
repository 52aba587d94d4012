"""The codes of `chatmem serve`'s errors, as OpenAI's own: clients match on them."""

from __future__ import annotations

from pathlib import Path

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("text", ["请把这段话记下来。" * 40, "长" * 90_000],
                         ids=["counted", "too-many-bytes"])
def test_a_message_over_the_budget_is_context_length_exceeded_as_openai_codes_it(
        chat_server: ChatServer, db_path: Path, stream: bool, text: str) -> None:
    """The 400 carried `code: null`; OpenAI's is `context_length_exceeded`, on `messages`,
    and clients (LangChain's trimming, agents that shorten and retry) match on it. Over
    the budget once counted (the engine's refusal) or by its bytes alone (before that)."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), context_budget=60)
    with RunningProxy(settings, strategy="window") as running:
        refused = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                             headers={"X-Chatmem-Conversation": "budget"},
                             json={"model": "test-small", "stream": stream,
                                   "messages": [{"role": "user", "content": text}]})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["type"], error["param"], error["code"]) == (
        "invalid_request_error", "messages", "context_length_exceeded")
    assert "over the context budget of 60" in error["message"]
    assert chat_server.requests == []
