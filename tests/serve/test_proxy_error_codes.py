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


@pytest.mark.parametrize(("plan", "status", "code"), [
    ("404", 404, "model_not_found"), ("404-ollama", 404, "model_not_found"),
    ("404-path", 502, None)])
def test_only_an_upstream_404_saying_the_model_is_unknown_is_model_not_found(
        chat_server: ChatServer, db_path: Path, plan: str, status: int,
        code: str | None) -> None:
    """Leftover: any upstream 404 was a 404 `model_not_found`, a server's base_url without
    its path too: a client told its model is unknown changed or dropped a model that was
    right (the SDK raises NotFoundError). A path the model's server lacks is the server's
    to mend: a 502, not retried, the details in its log."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    chat_server.plan = [plan]
    with RunningProxy(settings, strategy="window") as running:
        refused = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                             headers={"X-Chatmem-Conversation": "404"},
                             json={"model": "test-small",
                                   "messages": [{"role": "user", "content": "你好"}]})
        logged = running.logged
    assert refused.status_code == status, refused.text
    assert refused.json()["error"]["code"] == code
    if status == 502:
        assert refused.headers["x-should-retry"] == "false"
        assert refused.json()["error"]["message"] == (
            "the upstream model failed (it answered 404); the details are in chatmem serve's"
            " log")
        [line] = logged
        assert line.endswith("(Error code: 404 - no route /chat/completions): check base_url")
    assert len(chat_server.requests) == 1


def test_an_upstream_404_for_the_model_names_what_the_upstream_has(
        chat_server: ChatServer, db_path: Path) -> None:
    """Leftover: the client was told to check the model it names, and nothing of what it
    may name instead (GET /v1/models lists them, which a client seldom reads after a 404)."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    chat_server.models = ["qwen2.5:7b", "通义千问-max"]
    chat_server.plan = ["404"]
    with RunningProxy(settings, strategy="window") as running:
        refused = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                             headers={"X-Chatmem-Conversation": "names-404"},
                             json={"model": "qwen2.5",
                                   "messages": [{"role": "user", "content": "你好"}]})
    assert refused.status_code == 404, refused.text
    error = refused.json()["error"]
    assert error["code"] == "model_not_found"
    assert error["message"] == ("the upstream model answered 404: check the model the request"
                                " names; it has qwen2.5:7b, 通义千问-max")
    assert chat_server.base_url not in error["message"]


def test_404s_for_a_model_in_a_row_ask_the_upstream_for_its_list_once(
        chat_server: ChatServer, db_path: Path) -> None:
    """Leftover: each 404 for a model asked the upstream for its list anew, and its answer
    waited for it (up to 3 s where the upstream is slow to list): a client that kept naming
    a missing model waited that long each time. The list is kept a minute."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    chat_server.models = ["qwen2.5:7b", "通义千问-max"]
    chat_server.plan = ["404", "ok", "404"]
    said = []
    with RunningProxy(settings, strategy="window") as running:
        for n in range(2):
            refused = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                                 headers={"X-Chatmem-Conversation": f"list-{n}"},
                                 json={"model": "qwen2.5",
                                       "messages": [{"role": "user", "content": "你好"}]})
            assert refused.status_code == 404, refused.text
            said.append(refused.json()["error"]["message"])
    assert said[0] == said[1]
    assert said[0].endswith("; it has qwen2.5:7b, 通义千问-max")
    assert chat_server.paths.count("/v1/models") == 1
