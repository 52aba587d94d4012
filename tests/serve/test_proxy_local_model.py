"""`chatmem serve` over the embedded model: a client names the model as /v1/models lists it."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from local_model import local_model_missing
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from openai import NotFoundError, OpenAI
from test_proxy import RunningProxy, statuses

from chatmem.config.settings import Settings

pytestmark = [pytest.mark.local, pytest.mark.skipif(local_model_missing() is not None,
                                                    reason=str(local_model_missing()))]


def test_the_model_models_lists_is_the_one_a_request_may_name(db_path: Path) -> None:
    """/v1/models listed the embedded model by its file's stem, and a request naming it (as
    Open WebUI does, picking from that list) was a 502 ("the upstream model failed"): the
    local provider took the name for a path to a GGUF file, and found none."""
    settings = Settings(provider="local", db=str(db_path), max_reply_tokens=4)
    with RunningProxy(settings, strategy="window") as running:
        client = OpenAI(base_url=running.base_url, api_key="unused", max_retries=0,
                        timeout=HANG)
        listed = [m.id for m in client.models.list()]
        named, with_strategy = listed[0], f"{listed[0]}@buffer"
        assert with_strategy in listed
        for model in (named, with_strategy):
            answer = client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": "你好"}],
                extra_headers={"X-Chatmem-Conversation": quote("本地")})
            assert answer.choices[0].message.content
    assert statuses(db_path, "本地") == ["ok", "ok"]


def test_a_model_the_embedded_one_is_not_is_a_404_not_a_model_failure(db_path: Path) -> None:
    """A client that names another model (the SDK's habitual "gpt-4o-mini") was told "the
    upstream model failed" (a 502, which an SDK retries), not that no such model is here."""
    settings = Settings(provider="local", db=str(db_path), max_reply_tokens=4)
    with RunningProxy(settings, strategy="window") as running:
        client = OpenAI(base_url=running.base_url, api_key="unused", max_retries=0,
                        timeout=HANG)
        with pytest.raises(NotFoundError) as refused:
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "你好"}],
                extra_headers={"X-Chatmem-Conversation": "elsewhere"})
    assert refused.value.status_code == 404
    assert "check the model the request names" in refused.value.message
    assert statuses(db_path, "elsewhere") is None  # refused before a session was opened
