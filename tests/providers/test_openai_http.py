"""The openai provider against a real OpenAI-compatible server on 127.0.0.1.

The server (tests/chat_server.py) speaks HTTP and SSE; nothing stands in for
the openai client. It records every request body, so the tests compare what
it received with the context chatmem stored for the turn.
"""

from __future__ import annotations

import email.utils
import socket
import struct
import threading
import time
from pathlib import Path

import pytest
from chat_server import ChatServer
from cli_runner import invoke
from registered import create_embedder, open_session
from waiting import HANG

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderNotFound,
    ProviderRateLimited,
    ProviderResponseError,
)
from chatmem.memory.context import Context
from chatmem.providers.base import Purpose
from chatmem.providers.openai import OpenAIProvider
from chatmem.store import Store

SECRET = "sk-test-secret-value-1234567890"


def engine_for(store: Store, server: ChatServer, *, retries: int = 0, strategy: str = "window",
               **params: str) -> Engine:
    provider = OpenAIProvider("test-model", base_url=server.base_url, api_key=SECRET,
                              api_key_env="CHATMEM_TEST_KEY", timeout=HANG, max_retries=retries)
    return open_session(store, Settings(system="Be brief."), provider, "http",
                        strategy=strategy, params=params)


def test_server_receives_exactly_the_context_chatmem_reports(store, chat_server) -> None:
    engine = engine_for(store, chat_server, k="1")
    for text in ("my order is ORD-7731", "预算五千元", "what is my order?"):
        result = engine.run_turn(text)
        assert result.status == "ok"
        assert result.reply == "Hello from the test server."
    turns = store.turns.turns(engine.session.id)
    assert len(chat_server.requests) == len(turns) == 3
    for request, turn in zip(chat_server.requests, turns, strict=True):
        assert request["messages"] == Context.from_json(turn.context).messages()
        assert request["model"] == "test-model"
        assert request["stream"] is True
        assert request["stream_options"] == {"include_usage": True}
        # Usage reported by the server is stored next to chatmem's own estimate.
        assert turn.prompt_tokens == sum(len(m["content"].split()) for m in request["messages"])
        assert turn.completion_tokens == 5
    # window k=1: the third request holds the system prompt, turn 2 and the input.
    assert [m["content"] for m in chat_server.requests[2]["messages"]] == [
        "Be brief.", "预算五千元", "Hello from the test server.", "what is my order?",
    ]
    headers = {k.lower(): v for k, v in chat_server.headers_seen[0].items()}
    assert headers["authorization"] == f"Bearer {SECRET}"


def test_401_names_the_key_variable_never_the_key(store, chat_server) -> None:
    chat_server.plan = ["401"]
    engine = engine_for(store, chat_server)
    with pytest.raises(ProviderAuthError) as caught:
        engine.run_turn("hello")
    assert str(caught.value) == (
        f"{chat_server.base_url} refused the API key (401): check $CHATMEM_TEST_KEY"
    )
    assert SECRET not in str(caught.value)
    assert_failed_turn_only(store, engine, str(caught.value))


def test_an_error_quoting_the_key_back_never_shows_it(store, chat_server) -> None:
    chat_server.plan = ["echo-key"]
    engine = engine_for(store, chat_server)
    with pytest.raises(ProviderResponseError) as caught:
        engine.run_turn("hello")
    assert SECRET not in str(caught.value)
    assert "rejected header Bearer [api key]" in str(caught.value)
    assert SECRET not in repr(store.turns.turns(engine.session.id))


def test_429_then_success_is_retried(store, chat_server) -> None:
    chat_server.plan = ["429"]
    engine = engine_for(store, chat_server, retries=2)
    result = engine.run_turn("hello")
    assert result.status == "ok"
    assert len(chat_server.requests) == 2
    assert chat_server.requests[0] == chat_server.requests[1]
    assert [t.status for t in store.turns.turns(engine.session.id)] == ["ok"]


def test_429_after_all_retries_is_a_rate_limit_error(store, chat_server) -> None:
    chat_server.plan = ["429", "429"]
    engine = engine_for(store, chat_server, retries=1)
    with pytest.raises(ProviderRateLimited):
        engine.run_turn("hello")
    assert len(chat_server.requests) == 2
    assert_failed_turn_only(store, engine)


def test_a_429_asking_to_wait_past_the_clients_limit_says_how_long_and_is_not_retried(
    store, chat_server
) -> None:
    # Retry-After as an HTTP date 3 hours on: the client gives up at once (past 120 s), and
    # "after retries: wait and try again" said neither.
    chat_server.retry_after = email.utils.formatdate(time.time() + 3 * 3600 + 60, usegmt=True)
    chat_server.plan = ["429-retry-at"] * 3
    engine = engine_for(store, chat_server, retries=2)
    with pytest.raises(ProviderRateLimited) as caught:
        engine.run_turn("hello")
    assert str(caught.value).endswith("(429) and asks to wait 3 h: not retried; try again then")
    assert len(chat_server.requests) == 1
    assert_failed_turn_only(store, engine)


def test_500_is_a_clear_error_and_nothing_is_stored(store, chat_server) -> None:
    chat_server.plan = ["500", "500"]
    engine = engine_for(store, chat_server, retries=1)
    with pytest.raises(ProviderResponseError) as caught:
        engine.run_turn("hello")
    assert str(caught.value).startswith(f"{chat_server.base_url} answered 500: ")
    assert "The server had an error" in str(caught.value)
    assert_failed_turn_only(store, engine, str(caught.value))


def test_stream_cut_midway_stores_no_partial_message(store, chat_server) -> None:
    engine = engine_for(store, chat_server)
    engine.run_turn("first, complete")
    chat_server.plan = ["cut"]
    seen: list[str] = []
    with pytest.raises(ProviderResponseError) as caught:
        engine.run_turn("second, cut", on_delta=seen.append)
    assert seen == ["Hello", " from"]  # the user saw the start of the reply...
    assert str(caught.value) == (
        f"the reply stream from {chat_server.base_url} broke off before the reply was complete"
    )
    # ...but memory holds only the first, complete turn.
    assert [m.content for m in store.history.messages(engine.session.id)] == [
        "first, complete", "Hello from the test server.",
    ]
    turns = store.turns.turns(engine.session.id)
    assert [t.status for t in turns] == ["ok", "failed"]
    assert turns[1].error == str(caught.value)
    # The next turn goes on as if the cut turn never happened.
    engine.run_turn("third")
    assert "second, cut" not in str(chat_server.requests[-1]["messages"])


def test_unreachable_endpoint_is_a_connection_error(store) -> None:
    provider = OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", timeout=5, max_retries=0)
    engine = open_session(store, Settings(), provider, "nowhere")
    with pytest.raises(ProviderConnectionError) as caught:
        engine.run_turn("hello")
    assert str(caught.value) == "cannot reach http://127.0.0.1:9/v1: is the server running?"
    assert_failed_turn_only(store, engine, str(caught.value))


def test_a_connection_reset_before_any_answer_is_still_sent_again(store) -> None:
    # Only a timeout after the body went out, and a gateway's 502/504, are not resent (the
    # model may have the request, billed); a server that resets the connection unanswered
    # did not take it, so the client's retries stand.
    accepted = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(HANG)

        def reset_each() -> None:
            for _ in range(3):
                conn, _ = listener.accept()
                accepted.append(conn)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()

        resetter = threading.Thread(target=reset_each, daemon=True)
        resetter.start()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        provider = OpenAIProvider("m", base_url=url, timeout=HANG, max_retries=2)
        engine = open_session(store, Settings(), provider, "reset")
        with pytest.raises((ProviderResponseError, ProviderConnectionError)) as caught:
            engine.run_turn("hello")
        resetter.join(HANG)
    assert len(accepted) == 3, caught.value


def assert_failed_turn_only(store: Store, engine: Engine, error: str | None = None) -> None:
    assert store.history.messages(engine.session.id) == []
    (turn,) = store.turns.turns(engine.session.id)
    assert turn.status == "failed"
    assert turn.reply is None and turn.user_message_id is None
    assert turn.context["parts"][-1]["messages"][0]["content"] == "hello"
    if error is not None:
        assert turn.error == error
    assert SECRET not in repr(turn)


def test_a_fact_extraction_request_asks_the_server_for_json_only(chat_server) -> None:
    from chatmem.providers.openai import OpenAIProvider

    provider = OpenAIProvider("m", base_url=chat_server.base_url, max_retries=0)
    try:
        provider.complete([{"role": "user", "content": "my name is Ada"}], purpose=Purpose.FACTS)
        provider.complete([{"role": "user", "content": "summarize"}], purpose=Purpose.SUMMARY)
        "".join(provider.stream([{"role": "user", "content": "hi"}]))
    finally:
        provider.close()
    # Servers that honour it (llama.cpp, vLLM, Ollama, OpenAI) then decode valid JSON only.
    formats = [r.get("response_format") for r in chat_server.requests]
    assert formats == [{"type": "json_object"}, None, None]


def test_a_base_url_query_goes_with_every_request_after_its_path(
    chat_server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28: `…/v1?api-key=KEY` was sent as `/v1/?api-key=KEYchat/completions`. The
    query is now the query of each request, and the key stays out of every output and file."""
    key = "URLKEY-4f1e2d3c"
    config = tmp_path / "config.toml"
    config.write_text(f'base_url = "{chat_server.base_url}?api-key={key}&api-version=2"\n'
                      'model = "test-model"\nmax_retries = 0\n', encoding="utf-8")
    monkeypatch.setenv("CHATMEM_CONFIG", str(config))
    db = tmp_path / "h.db"
    printed = [invoke("chat", "s", "--provider", "openai", "--db", str(db), input="hi\n",
                      code=0),
               invoke("models", "--provider", "openai", code=0),
               invoke("inspect", "s", "--json", "--db", str(db), code=0),
               invoke("config", "show", code=0)]
    embedder = create_embedder("openai", Settings(embeddings=EmbeddingsSection(
        provider="openai", model="e", base_url=f"{chat_server.base_url}?api-key={key}"),
        max_retries=0))
    assert embedder.embed(["hello"]).shape == (1, 8)
    query = f"api-key={key}"
    assert chat_server.paths == [f"/v1/chat/completions?{query}&api-version=2",
                                 f"/v1/models?{query}&api-version=2",
                                 f"/v1/embeddings?{query}"]
    assert "Hello from the test server." in printed[0].stdout
    for result in printed:
        assert key not in result.output
    for path in tmp_path.iterdir():
        if path != config:
            assert key.encode() not in path.read_bytes(), path


def test_a_request_costs_the_client_library_no_work_per_message(chat_server) -> None:
    """`chat.completions.create` walked every message through the client's request types
    (0.15 ms a message: 5 ms more before a 36-message context's first token). The body is
    sent as built: the client library runs as much Python for 96 messages as for 2,
    and the server receives them as they were, Chinese and image parts included."""
    import sys

    import openai

    library = str(Path(openai.__file__).parent)
    provider = OpenAIProvider("m", base_url=chat_server.base_url, max_retries=0)

    def calls_in_library(messages: list[dict[str, object]]) -> int:
        count = 0

        def profile(frame: object, event: str, arg: object) -> None:
            nonlocal count
            if event == "call" and frame.f_code.co_filename.startswith(library):  # type: ignore[attr-defined]
                count += 1

        sys.setprofile(profile)
        try:
            reply = "".join(provider.stream(messages))
        finally:
            sys.setprofile(None)
        assert reply == "Hello from the test server."
        return count

    image = {"role": "user", "content": [
        {"type": "text", "text": "这是什么？"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}

    def context(size: int) -> list[dict[str, object]]:
        turns = [{"role": "user" if i % 2 == 0 else "assistant",
                  "content": f"turn {i}: 预算五千元, order ORD-{i}"} for i in range(size - 2)]
        return [{"role": "system", "content": "Be brief."}, *turns, image]

    try:
        calls_in_library(context(2))  # warm: a connection open, modules imported
        few, many = calls_in_library(context(4)), calls_in_library(context(96))
    finally:
        provider.close()
    assert many - few < 20, (few, many)
    assert chat_server.requests[-1]["messages"] == context(96)


def test_a_reply_of_tool_calls_is_named_not_called_empty(store, chat_server) -> None:
    chat_server.plan = ["tool-calls"]
    engine = engine_for(store, chat_server)
    with pytest.raises(ProviderResponseError) as caught:
        engine.run_turn("hello")
    assert str(caught.value) == (f"{chat_server.base_url} answered with tool calls"
                                 " (finish_reason tool_calls), not text: chatmem offers no"
                                 " tools; check the model's or the server's chat template")
    assert_failed_turn_only(store, engine, str(caught.value))


SERVED = ["llama3", "qwen2.5:7b", "通义千问-max"]


def test_a_404_for_the_model_carries_what_the_server_lists(store, chat_server) -> None:
    """Leftover: "check the model name and base_url" named nothing the server has, and
    the user guessed again (`chatmem models` lists them): the error carries its list."""
    chat_server.models = [SECRET, *reversed(SERVED)]  # a name quoting the key is left out
    chat_server.plan = ["404"]
    engine = engine_for(store, chat_server)
    with pytest.raises(ProviderNotFound) as caught:
        engine.run_turn("hello")
    assert caught.value.served == tuple(SERVED)
    assert chat_server.paths[-1] == "/v1/models"
    # The turn's stored error is the server's answer, not what it lists now.
    assert_failed_turn_only(store, engine, str(caught.value))
    assert "llama3" not in str(caught.value)
    from chatmem.providers.listings import forget_listings

    forget_listings()  # else the listing of a moment ago is named again without asking
    chat_server.plan = ["404", "404-path"]  # and its listing fails: nothing named
    with pytest.raises(ProviderNotFound) as again:
        engine.run_turn("hello")
    assert again.value.served is None


def test_chat_s_404_for_a_model_names_the_models_the_server_has(
        tmp_path: Path, chat_server) -> None:
    env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": chat_server.base_url}
    chat_server.models = SERVED
    chat_server.plan = ["404"]
    result = invoke("ask", "你好", "--provider", "openai", "--model", "qwen2.5", env=env,
                    code=1)
    [line] = result.stderr.splitlines()
    assert line.endswith("answered 404 for model 'qwen2.5': check the model name and "
                         "base_url; it has llama3, qwen2.5:7b, 通义千问-max")
    from chatmem.providers.listings import forget_listings

    forget_listings()  # another process (one command each): nothing listed yet
    chat_server.models = [f"模型{i:02}" for i in range(20)]
    chat_server.plan = ["404-ollama"]
    result = invoke("chat", "s", "--provider", "openai", "--model", "qwen2.5", "--db",
                    str(tmp_path / "h.db"), input="hi\n", env=env)
    [line] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert line.endswith("; it has " + ", ".join(f"模型{i:02}" for i in range(8))
                         + " and 12 more (chatmem models)")
