"""max_reply_tokens: the reply cap reaches the server; the local model has one by default."""

from __future__ import annotations

import pytest
from local_model import local_model_missing
from plugin_site import CAPPED, Install
from registered import create_provider
from waiting import HANG

from chatmem.config.settings import LOCAL_MAX_REPLY_TOKENS, Settings
from chatmem.notices import ReplyCut
from chatmem.providers.openai import OpenAIProvider


# Unset, the cap is openai.DEFAULT_MAX_REPLY_TOKENS (issue 13: a 5 MB reply was stored).
@pytest.mark.parametrize(("cap", "sent"), [(7, 7), (None, 4096)])
def test_the_cap_reaches_an_openai_compatible_server(chat_server, cap: int | None,
                                                     sent: int | None) -> None:
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="m",
                        max_reply_tokens=cap, max_retries=0)
    provider = create_provider(settings)
    try:
        assert "".join(provider.stream([{"role": "user", "content": "hi"}]))
    finally:
        provider.close()
    assert chat_server.requests[0].get("max_tokens") == sent


@pytest.mark.local
def test_the_local_model_is_capped_unless_configured() -> None:

    if (missing := local_model_missing()) is not None:
        pytest.skip(missing)
    default = create_provider(Settings(provider="local"))
    try:
        assert default.max_tokens == LOCAL_MAX_REPLY_TOKENS  # type: ignore[attr-defined]
    finally:
        default.close()
    capped = create_provider(Settings(provider="local", max_reply_tokens=3))
    try:
        stream = capped.stream([{"role": "user", "content": "Tell me a long story about Rome."}])
        assert "".join(stream)
        assert stream.usage.completion_tokens == 3
    finally:
        capped.close()


def test_a_reply_cut_by_the_cap_is_stored_and_flagged(chat_server, store) -> None:
    from registered import open_session

    chat_server.reply_words = ["one ", "two ", "three ", "four ", "five"]
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="m",
                        max_reply_tokens=2, max_retries=0)
    provider = create_provider(settings)
    try:
        engine = open_session(store, settings, provider, "capped", strategy="buffer")
        result = engine.run_turn("count to five")
    finally:
        provider.close()
    assert result.status == "ok" and result.reply == "one two "
    assert result.notices == [ReplyCut()]
    assert [m.content for m in store.history.messages(engine.session.id)] == ["count to five",
                                                                              "one two "]


def test_openai_without_a_key_or_a_server_says_which_variable_to_set() -> None:
    from chatmem.errors import ProviderAuthError

    with pytest.raises(ProviderAuthError) as error:
        create_provider(Settings(provider="openai"))
    assert str(error.value) == (
        "$OPENAI_API_KEY is not set: export your OpenAI key in it, or point base_url "
        "(or OPENAI_BASE_URL) at a local OpenAI-compatible server"
    )


def test_options_shape_the_chat_reply_and_not_memorys_summary_or_extraction(
        chat_server) -> None:
    """-o (a template's, a served request's) options and their reply cap are the chat's: a
    summary asked with -o max_reply_tokens 2 and stop words was cut to two words and stored,
    and sent again on every later turn."""
    from chatmem.config.settings import OPTION_FLAG, with_options
    from chatmem.providers.base import Purpose

    options = {"max_reply_tokens": 2, "temperature": 0.3, "seed": 7, "stop": ["zzz"]}
    settings = with_options(Settings(provider="openai", base_url=chat_server.base_url,
                                     model="m", max_reply_tokens=50, max_retries=0),
                            options, OPTION_FLAG)
    provider = create_provider(settings)
    asked = [{"role": "user", "content": "总结一下"}]
    try:
        assert "".join(provider.stream(asked)) == "Hello from"
        summary = provider.complete(asked, purpose=Purpose.SUMMARY)
        provider.complete(asked, purpose=Purpose.FACTS)
        provider.complete(asked, purpose=Purpose.CHAT)  # a replay's probe answer: a reply
    finally:
        provider.close()
    assert summary == "Hello from the test server."
    fields = ("max_tokens", "temperature", "seed", "stop")
    chat, summarized, extracted, answered = ({key: body.get(key) for key in fields}
                                             for body in chat_server.requests)
    assert chat == answered == {"max_tokens": 2, "temperature": 0.3, "seed": 7,
                                "stop": ["zzz"]}
    assert summarized == extracted == {"max_tokens": 50, "temperature": None, "seed": None,
                                       "stop": None}


def test_a_plugin_provider_is_made_with_the_chats_reply_cap(installed: Install) -> None:
    """-o max_reply_tokens (a served request's max_tokens) stopped reaching a plugin's chat
    provider when options stopped overwriting max_reply_tokens: it saw the configured 800."""
    from chatmem.config.settings import OPTION_FLAG, with_options
    from chatmem.plugins import load_registries

    installed("chatmem-capped", "chatmem_capped", CAPPED, name="capped")
    configured = Settings(provider="capped", max_reply_tokens=800)
    create = load_registries().create_provider
    for settings, said in ((with_options(configured, {"max_reply_tokens": 5}, OPTION_FLAG),
                            "上限 5"), (configured, "上限 800")):
        provider = create(settings)
        try:
            assert "".join(provider.stream([{"role": "user", "content": "你好"}])) == said
        finally:
            provider.close()


def capped_at_ten(server) -> OpenAIProvider:  # type: ignore[no-untyped-def]
    # No reply_timeout or idle_timeout: only the cap may stop a reply here.
    return OpenAIProvider("m", base_url=server.base_url, api_key="sk-x", max_retries=0,
                          timeout=HANG, max_tokens=10)


def test_one_piece_past_the_cap_is_cut_before_it_is_shown_or_stored(
        chat_server, store) -> None:
    """A server that ignores max_tokens sent a megabyte in one piece: all of it was shown
    and stored under max_reply_tokens 10 (the cap was checked only after each piece)."""
    from registered import open_session

    chat_server.plan = ["big-piece"]
    provider = capped_at_ten(chat_server)
    shown: list[str] = []
    try:
        engine = open_session(store, Settings(), provider, "capped", strategy="buffer")
        result = engine.run_turn("hi", on_delta=shown.append)
    finally:
        provider.close()
    assert result.status == "ok" and result.notices == [ReplyCut()]
    assert result.reply == "x" * 160 == "".join(shown)  # 10 tokens × 16 characters
    assert [m.content for m in store.history.messages(engine.session.id)] == ["hi", "x" * 160]


@pytest.mark.parametrize("mode", ["endless-line", "endless-json"])
def test_a_body_that_never_ends_is_read_no_further_than_the_cap_allows(
        chat_server, mode: str) -> None:
    """A `data:` line without end grew memory until idle_timeout (none here: forever); a
    JSON answer was read whole before its size was checked."""
    from chatmem.errors import ProviderResponseError

    chat_server.plan = [mode]
    provider = capped_at_ten(chat_server)
    try:
        with pytest.raises(ProviderResponseError) as error:
            "".join(provider.stream([{"role": "user", "content": "hi"}]))
    finally:
        provider.close()
    assert "bytes" in str(error.value) and chat_server.base_url in str(error.value)
    # 10 tokens × 4 KB + 1 MB beside them, and what the sockets held by then.
    assert chat_server.hung_up.wait(HANG) and chat_server.bytes_sent < 8 << 20


def test_a_json_answer_with_logprobs_is_read_within_the_streams_bound(chat_server) -> None:
    """A JSON answer was bounded at 4 bytes a character of the cap: 300 tokens with their
    top_logprobs (~2 KB each, as -o top_logprobs=20 asks) were refused as too long."""
    chat_server.plan = ["json-logprobs"]
    chat_server.reply_words = [f"w{n} " for n in range(300)]
    provider = OpenAIProvider("m", base_url=chat_server.base_url, api_key="sk-x",
                              max_retries=0, timeout=HANG, max_tokens=400)
    try:
        assert "".join(provider.stream([{"role": "user", "content": "hi"}])) == \
            "".join(chat_server.reply_words)
    finally:
        provider.close()
