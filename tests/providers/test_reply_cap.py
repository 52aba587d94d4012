"""max_reply_tokens: the reply cap reaches the server; the local model has one by default."""

from __future__ import annotations

import pytest

from chatmem.config import LOCAL_MAX_REPLY_TOKENS, Settings
from chatmem.providers import create_provider


@pytest.mark.parametrize(("cap", "sent"), [(7, 7), (None, None)])
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
    from chatmem.providers.local import bundled_model_path, xllamacpp_installed

    if not xllamacpp_installed() or bundled_model_path() is None:
        pytest.skip("the local model is not installed")
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
