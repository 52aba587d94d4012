"""The model behind `chatmem serve` fails: its client is told that it failed and how, with a
status that is not its own fault (a 502, a 504), never the model's address nor its words;
the server's log has them."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from openai import BadRequestError, InternalServerError, OpenAI
from test_proxy import RunningProxy, statuses

from chatmem.config.settings import Settings

FAILED = "the upstream model failed (it answered {}); the details are in chatmem serve's log"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_upstream_error_is_a_502_without_its_address_or_words(
        chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    asked = {"model": "test-small", "stream": stream,
             "messages": [{"role": "user", "content": "杭州天气如何？"}]}
    with RunningProxy(settings, strategy="window") as running:
        chat_server.plan = ["500-internal"]
        failed = httpx.post(f"{running.base_url}/chat/completions", json=asked, timeout=HANG,
                            headers={"X-Chatmem-Conversation": quote("天气")})
        # The upstream's 401 is the server's key, not the client's: no AuthenticationError.
        chat_server.plan = ["401"]
        openai = OpenAI(base_url=running.base_url, api_key="the client's own", max_retries=0,
                        timeout=HANG)
        with pytest.raises(InternalServerError) as refused:
            list(openai.chat.completions.create(
                model="test-small", stream=True, messages=[{"role": "user", "content": "hi"}],
                extra_headers={"X-Chatmem-Conversation": "key"}))
    assert failed.status_code == 502, failed.text
    assert failed.json()["error"] == {"message": FAILED.format(500), "type": "api_error",
                                      "param": None, "code": None}
    told = failed.text + json.dumps(refused.value.body)
    for internal in (chat_server.base_url, "127.0.0.1", "10.0.0.7", "internal", "vLLM",
                     "CHATMEM", "OPENAI_API_KEY", "sk-test"):
        assert internal not in told, internal
    assert refused.value.status_code == 502
    assert refused.value.body["message"] == FAILED.format(401)  # type: ignore[index]
    # The owner's log has what the client was not told, in one line each, keys masked.
    assert len(running.logged) == 2, running.logged
    assert running.logged[0].startswith("天气: the model failed: ")
    assert chat_server.base_url in running.logged[0]
    assert "http://10.0.0.7:9000/internal/llm" in running.logged[0]
    assert "401" in running.logged[1] and "sk-test" not in running.logged[1]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_field_the_model_refuses_is_a_400_naming_it_which_an_sdk_does_not_retry(
        chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    """A 502 for it was retried by the openai SDK: three requests, three failed turns, and
    the client never learned which field the model did not take."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), api_key_env="CHATMEM_TEST_KEY")
    chat_server.refuses = "reasoning_effort"
    with RunningProxy(settings, strategy="window") as running:
        client = OpenAI(base_url=running.base_url, api_key="the client's own", timeout=HANG)
        with pytest.raises(BadRequestError) as refused:
            answer = client.chat.completions.create(
                model="test-small", stream=stream, reasoning_effort="extreme",
                messages=[{"role": "user", "content": "证明费马大定理"}],
                extra_headers={"X-Chatmem-Conversation": quote("推理")})
            list(answer) if stream else None  # type: ignore[call-overload]
    assert refused.value.status_code == 400
    assert refused.value.body == {  # the SDK's view of OpenAI's error shape
        "message": "the upstream model refused the request (400): it does not take the field"
                   " 'reasoning_effort'; the details are in chatmem serve's log",
        "type": "invalid_request_error", "param": "reasoning_effort", "code": None}
    assert chat_server.base_url not in json.dumps(refused.value.body)
    assert len(chat_server.requests) == 1  # neither the SDK nor chatmem asked again
    assert statuses(db_path, "推理") == ["failed"]  # stored as any failed upstream call is
    assert len(running.logged) == 1 and chat_server.base_url in running.logged[0]


def test_a_refusal_tells_a_client_no_more_than_the_field_it_sent(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: the model's own words went to the client (its gateway's hosts, an internal
    URL, a key file's path), and its `param` as it came, which a gateway had filled with
    the Authorization header it got."""
    monkeypatch.setenv("CHATMEM_TEST_KEY", "sk-test-SECRETKEY1234567890abcdef")
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), api_key_env="CHATMEM_TEST_KEY")
    chat_server.refuses = "top_k"
    chat_server.refused_as = ("vLLM gateway 10.0.0.7:9000 -> http://10.0.0.7:9000/internal/llm:"
                              " Unsupported parameter 'top_k'; key file /srv/secrets/llm.key",
                              "top_k {key}")
    with RunningProxy(settings, strategy="window") as running:
        client = OpenAI(base_url=running.base_url, api_key="the client's own", timeout=HANG,
                        max_retries=0)
        with pytest.raises(BadRequestError) as refused:
            client.chat.completions.create(
                model="test-small", extra_body={"top_k": 3},
                messages=[{"role": "user", "content": "你好"}],
                extra_headers={"X-Chatmem-Conversation": "gw"})
    body = json.dumps(refused.value.body, ensure_ascii=False)
    assert refused.value.body["param"] is None  # type: ignore[index]
    for hidden in ("10.0.0.7", "internal", "vLLM", "/srv/secrets", "SECRETKEY"):
        assert hidden not in body, hidden
    assert "10.0.0.7" in running.logged[0] and "SECRETKEY" not in running.logged[0]


@pytest.mark.parametrize("param", ["sk-test-SECRETKEY1234567890abcdef",
                                   "gsk_8fJ2kLmN0pQrStUvWxYz1234SECRET"],
                         ids=["the-server-s-key", "a-key"])
def test_a_refusal_naming_a_key_as_its_field_does_not_pass_the_key_on(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch,
        param: str) -> None:
    """attack69: a `param` that is a key alone (no space, so it read as a field's name) went
    to the client in `param` and its message: the server's own key, to any client of it."""
    monkeypatch.setenv("CHATMEM_TEST_KEY", "sk-test-SECRETKEY1234567890abcdef")
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), api_key_env="CHATMEM_TEST_KEY")
    chat_server.refuses = "top_k"
    chat_server.refused_as = ("Unsupported parameter", param)
    with RunningProxy(settings, strategy="window") as running:
        refused = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                             headers={"X-Chatmem-Conversation": "gw"},
                             json={"model": "test-small", "top_k": 3,
                                   "messages": [{"role": "user", "content": "你好"}]})
    assert refused.status_code == 400 and refused.json()["error"]["param"] is None
    assert "SECRET" not in refused.text


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_upstream_429_passes_on_its_retry_after_as_a_rate_limit_error(
        chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    """The model's 429 was relayed without its Retry-After, typed `invalid_request_error`
    (the client's fault): an SDK retried it at once, each try refused again and stored as
    a failed turn, and a client had no way to know to wait an hour."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    asked = {"model": "test-small", "stream": stream,
             "messages": [{"role": "user", "content": "还在限流吗？"}]}
    chat_server.retry_after = "3600"
    with RunningProxy(settings, strategy="window") as running:
        chat_server.plan = ["429-retry-at"]
        limited = httpx.post(f"{running.base_url}/chat/completions", json=asked, timeout=HANG,
                             headers={"X-Chatmem-Conversation": quote("限流")})
    assert limited.status_code == 429, limited.text
    assert limited.headers["retry-after"] == "3600"
    error = limited.json()["error"]
    assert (error["type"], error["code"]) == ("rate_limit_error", "rate_limit_exceeded")
    assert len(chat_server.requests) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_upstream_used_up_quota_is_a_429_insufficient_quota_as_openai_answers(
        chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    """The model's 429 insufficient_quota reached the client as a 502 (an SDK retries a
    5xx, each try a failed turn); OpenAI answers it as a 429 typed and coded
    insufficient_quota, which clients tell from a rate limit that waiting ends."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0)
    asked = {"model": "test-small", "stream": stream,
             "messages": [{"role": "user", "content": "额度用完了吗？"}]}
    with RunningProxy(settings, strategy="window") as running:
        chat_server.plan = ["429-quota"]
        refused = httpx.post(f"{running.base_url}/chat/completions", json=asked, timeout=HANG,
                             headers={"X-Chatmem-Conversation": quote("额度")})
    assert refused.status_code == 429, refused.text
    assert "retry-after" not in refused.headers  # waiting does not help
    error = refused.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "insufficient_quota", "insufficient_quota", None)
    assert "no quota left" in error["message"]
    assert chat_server.base_url not in refused.text
    assert len(chat_server.requests) == 1


@pytest.mark.parametrize("plan", [["cut"], ["504"], ["500", "500", "500"]],
                         ids=["cut-mid-reply", "gateway-timeout", "failed-after-retries"])
def test_a_model_failure_is_not_asked_again_by_the_clients_sdk(
        chat_server: ChatServer, db_path: Path, plan: list[str]) -> None:
    """The openai SDK retries every 5xx twice of itself: a reply cut after the model began
    (billed) was asked for three times, a gateway's 504 (the model may be working on it
    still) three times, and a 500 chatmem had already asked again twice nine times, each a
    failed turn. chatmem's own client already asked again what it safely could."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=2)
    chat_server.plan = list(plan)
    with RunningProxy(settings, strategy="window") as running:
        client = OpenAI(base_url=running.base_url, api_key="the client's own", timeout=HANG)
        with pytest.raises(InternalServerError) as failed:
            client.chat.completions.create(
                model="test-small", messages=[{"role": "user", "content": "写一首长诗"}],
                extra_headers={"X-Chatmem-Conversation": quote("长诗")})
    assert failed.value.status_code == 502
    assert failed.value.response.headers["x-should-retry"] == "false"
    assert len(chat_server.requests) == len(plan)  # chatmem's own tries only
    assert statuses(db_path, "长诗") == ["failed"]


def test_a_hung_upstream_holds_the_model_list_a_moment_not_three_timeouts(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: /v1/models asked the upstream's /models with a chat's bounds, `timeout` per
    try and two retries, so an upstream that took the connection and never answered held
    the listing 3 x 60 s, past any front end's wait for its model menu. It is asked once,
    for at most LISTING_TIMEOUT, then the configured model is listed as when it fails."""
    import socket
    import threading
    import time

    from chatmem.providers import openai as openai_provider

    # That the listing has a bound of its own is under test, not its 8 s: a bound of 1 s
    # (still far below the chat's 3 x 60 s) spares the run 7 s of waiting.
    monkeypatch.setattr(openai_provider, "LISTING_TIMEOUT", 1.0)
    bound = openai_provider.LISTING_TIMEOUT
    listener = socket.create_server(("127.0.0.1", 0))
    taken: list[socket.socket] = []

    def take() -> None:  # takes each connection and its request, and never answers
        while True:
            try:
                taken.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=take, daemon=True).start()
    base_url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    settings = Settings(provider="openai", base_url=base_url, model="模型-small",
                        db=str(db_path), timeout=60.0, max_retries=2)
    try:
        with RunningProxy(settings, strategy="window") as running:
            began = time.monotonic()
            listed = httpx.get(f"{running.base_url}/models", timeout=HANG)
            took = time.monotonic() - began
    finally:
        listener.close()
        for connection in taken:
            connection.close()
    assert listed.status_code == 200
    assert "模型-small" in [model["id"] for model in listed.json()["data"]]
    assert took < bound + 5
    assert len(taken) == 1  # asked once: no retry of a listing


@pytest.mark.parametrize("mode", ["thinking", "thinking-as-reasoning"])
def test_a_reasoning_model_thinking_longer_than_idle_timeout_is_answered(
        chat_server: ChatServer, db_path: Path, mode: str) -> None:
    # Its thoughts stream (as vLLM, llama.cpp, DeepSeek, Ollama stream them) apart from the
    # reply: the server is answering, never idle, though no piece of the reply comes yet.
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_retries=0, idle_timeout=0.5)
    chat_server.plan = [mode]
    chat_server.think_every = 0.3
    chat_server.thoughts = ["想一想", " step", " by", " step", " 再想想", "."]  # 1.8 s in all
    with RunningProxy(settings, strategy="window") as running:
        openai = OpenAI(base_url=running.base_url, api_key="x", max_retries=0, timeout=HANG)
        reply = openai.chat.completions.create(
            model="test-small", messages=[{"role": "user", "content": "为什么天是蓝的？"}],
            extra_headers={"X-Chatmem-Conversation": "think"})
    assert reply.choices[0].message.content == "Hello from the test server."
    assert running.logged == []
    assert statuses(db_path, "think") == ["ok"]
