"""Replies of OpenAI's reasoning models and their kin: the reply cap's field name, a refusal,
a reply the cap or a content filter stopped before any text."""

from __future__ import annotations

from pathlib import Path

import pytest
from chat_server import ChatServer
from registered import create_provider, open_session

from chatmem.config.settings import Settings
from chatmem.notices import CutBy, ReplyCut
from chatmem.providers.base import innermost
from chatmem.providers.openai import cap_field_for
from chatmem.store import Store


def settings_for(server: ChatServer, **more: object) -> Settings:
    return Settings(provider="openai", base_url=server.base_url, model="o4-mini",
                    max_retries=0, **more)  # type: ignore[arg-type]


@pytest.mark.parametrize(("base_url", "field"), [
    ("https://api.openai.com/v1", "max_completion_tokens"),
    ("https://API.OpenAI.com/v1/", "max_completion_tokens"),
    ("http://127.0.0.1:11434/v1", "max_tokens"),  # Ollama ignores max_completion_tokens
    ("https://openrouter.ai/api/v1", "max_tokens"),
    ("https://api.openai.com.example.net/v1", "max_tokens"),
])
def test_the_cap_goes_in_the_field_the_endpoint_reads(base_url: str, field: str) -> None:
    assert cap_field_for(base_url) == field


@pytest.mark.parametrize("refused", ["max_tokens", "max_completion_tokens"])
def test_a_server_that_refuses_the_caps_field_is_asked_with_the_one_it_names(
        chat_server: ChatServer, refused: str) -> None:
    """OpenAI answers 400 "Unsupported parameter: 'max_tokens' ... Use
    'max_completion_tokens' instead." for o1, o3, o4-mini and gpt-5: every chat failed."""
    other = ({"max_tokens", "max_completion_tokens"} - {refused}).pop()
    chat_server.refuses = refused
    provider = create_provider(settings_for(chat_server, max_reply_tokens=3))
    if refused == "max_completion_tokens":
        innermost(provider).cap_field = refused  # type: ignore[attr-defined]
    try:
        first = "".join(provider.stream([{"role": "user", "content": "你好"}]))
        again = "".join(provider.stream([{"role": "user", "content": "再说一次"}]))
    finally:
        provider.close()
    assert first == again == "Hello from the"  # capped at 3 words, under either name
    assert [r.get(refused) for r in chat_server.requests] == [3, None, None]
    assert [r.get(other) for r in chat_server.requests] == [None, 3, 3]


def test_a_400_about_another_field_is_not_asked_again(chat_server: ChatServer) -> None:
    from chatmem.errors import ProviderResponseError

    chat_server.plan = ["echo-key"]
    provider = create_provider(settings_for(chat_server))
    try:
        with pytest.raises(ProviderResponseError, match="answered 400"):
            "".join(provider.stream([{"role": "user", "content": "hi"}]))
    finally:
        provider.close()
    assert len(chat_server.requests) == 1


def test_a_refusal_is_the_reply_shown_and_stored(chat_server: ChatServer,
                                                 store: Store) -> None:
    """OpenAI streams a refusal as `delta.refusal` and no content: the turn failed with
    "sent an empty reply"."""
    chat_server.plan = ["refusal"]
    provider = create_provider(settings_for(chat_server))
    try:
        engine = open_session(store, settings_for(chat_server), provider, "refused")
        result = engine.run_turn("帮我撬锁")
    finally:
        provider.close()
    assert (result.status, result.reply, result.notices) == (
        "ok", "I'm sorry, I can't help with that.", [])
    assert [m.content for m in store.history.messages(engine.session.id)] == [
        "帮我撬锁", "I'm sorry, I can't help with that."]


@pytest.mark.parametrize(("mode", "cut"), [("thought-to-the-cap", CutBy.LIMIT),
                                           ("filtered-empty", CutBy.FILTER)])
def test_a_reply_stopped_before_any_text_is_an_empty_turn_that_says_why(
        chat_server: ChatServer, store: Store, mode: str, cut: CutBy) -> None:
    """A reasoning model that spent the whole cap thinking, or a filter that stopped the
    reply at once, sent no text: the turn failed as "an empty reply", though the model
    answered as asked (a served client got a 502 and retried it three times)."""
    chat_server.plan = [mode]
    provider = create_provider(settings_for(chat_server))
    try:
        engine = open_session(store, settings_for(chat_server), provider, "empty-" + mode)
        result = engine.run_turn("想一想")
    finally:
        provider.close()
    assert (result.status, result.reply, result.cut) == ("ok", "", cut)
    assert result.notices == [ReplyCut(cut, empty=True)]
    assert [m.content for m in store.history.messages(engine.session.id)] == ["想一想", ""]


def test_a_filtered_reply_is_stored_as_it_is_and_says_so(chat_server: ChatServer,
                                                         store: Store) -> None:
    chat_server.plan = ["filtered"]
    provider = create_provider(settings_for(chat_server))
    try:
        engine = open_session(store, settings_for(chat_server), provider, "filtered")
        result = engine.run_turn("hi")
    finally:
        provider.close()
    assert (result.reply, result.notices) == ("Hello from the test server.",
                                              [ReplyCut(CutBy.FILTER)])


def test_an_empty_reply_the_model_ended_is_still_a_fault(chat_server: ChatServer) -> None:
    from chatmem.errors import ProviderResponseError

    chat_server.plan = ["empty-reply"]
    provider = create_provider(settings_for(chat_server))
    try:
        with pytest.raises(ProviderResponseError, match="sent an empty reply"):
            "".join(provider.stream([{"role": "user", "content": "hi"}]))
    finally:
        provider.close()


def test_a_cap_field_learnt_once_holds_for_every_requests_options(
        chat_server: ChatServer, tmp_path: Path) -> None:
    """A server's requests bring options of their own (a temperature here, none there, a
    seed): each gets a copy of the pooled model with them (`with_call_options`). What one
    learnt from a refused cap field stayed with that copy, so a client switching options
    was refused, and asked again, on every switch (a round trip each, and a 400 logged)."""
    from chatmem.app import Workspace
    from chatmem.app.model_pool import ModelPool
    from chatmem.config.settings import Source, SourceKind, with_options

    chat_server.refuses = "max_tokens"
    pool = ModelPool()
    settings = settings_for(chat_server, db=str(tmp_path / "历史.db"))
    asked = [{"temperature": 0.2}, {}, {"seed": 7}, {"temperature": 0.2}, {"seed": 8}]
    try:
        for options in asked:
            with Workspace(with_options(settings, options, Source(SourceKind.FLAG, "request")),
                           models=pool) as ws:
                assert "".join(ws.chat_provider.stream(
                    [{"role": "user", "content": "你好"}])) == "Hello from the test server."
    finally:
        pool.close()
    sent = chat_server.requests
    assert ["max_tokens" in r for r in sent] == [True] + [False] * len(asked)
    assert [(r.get("temperature"), r.get("seed")) for r in sent[1:]] == [
        (o.get("temperature"), o.get("seed")) for o in asked]
