"""The paths `chatmem serve` answers, with a slash too many too: never a redirect with an
empty body, and a path it does not serve is a 404 naming what it serves, coded as OpenAI's."""

from __future__ import annotations

from pathlib import Path

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
import openai as sdk
from test_proxy import RunningProxy, statuses

from chatmem.config.settings import Settings


def test_a_path_with_a_trailing_slash_is_served_not_redirected(
        chat_server: ChatServer, db_path: Path) -> None:
    """`POST /v1/chat/completions/` got a 307 with an empty body: the openai SDKs follow it,
    but curl, httpx and many a bot's own HTTP code do not, and had nothing to show."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="window") as running:
        answered = httpx.post(f"{running.base_url}/chat/completions/", timeout=HANG,
                              headers={"X-Chatmem-Conversation": "slash"},
                              json={"model": "test-small",
                                    "messages": [{"role": "user", "content": "你好"}]})
        listed = httpx.get(f"{running.base_url}/models/", timeout=HANG)
        client = sdk.OpenAI(base_url=running.base_url, api_key="x", max_retries=0,
                            timeout=HANG)
        with pytest.raises(sdk.NotFoundError) as refused:
            client.completions.create(model="test-small", prompt="你好")
    assert answered.status_code == 200, answered.text
    assert answered.json()["choices"][0]["message"]["content"] == "Hello from the test server."
    assert statuses(db_path, "slash") == ["ok"]
    assert listed.status_code == 200
    assert "test-small" in [model["id"] for model in listed.json()["data"]]
    error = refused.value.body
    assert isinstance(error, dict)
    assert error["message"].startswith("POST /v1/completions is not served here: "
                                       "chatmem serves POST /v1/chat/completions")
    assert (error["type"], error["code"]) == ("invalid_request_error", "unknown_url")


def test_a_method_not_served_says_which_methods_are(chat_server: ChatServer,
                                                    db_path: Path) -> None:
    """A 405 came without the Allow header HTTP requires of it (RFC 9110, 15.5.6): a client
    (curl -I, a health check's HEAD or GET on the chat path) was not told what to send."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="window") as running:
        got = httpx.get(f"{running.base_url}/chat/completions", timeout=HANG)
        posted = httpx.post(f"{running.base_url}/models", timeout=HANG, json={})
    assert (got.status_code, got.headers.get("allow")) == (405, "POST")
    assert posted.status_code == 405
    assert set(posted.headers.get("allow", "").split(", ")) == {"GET", "HEAD"}
    assert got.json()["error"]["type"] == "invalid_request_error"
