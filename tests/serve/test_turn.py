"""A streamed turn of `chatmem serve` as the official openai client reads it: OpenAI's chunks,
usage only when asked, in a chunk of its own."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from openai import OpenAI
from starlette.testclient import TestClient

from chatmem.config.settings import Settings
from chatmem.serve.proxy import build_app


def test_usage_is_streamed_only_when_asked_as_a_last_chunk_without_choices(
        tmp_path: Path) -> None:
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"))
    with TestClient(build_app(settings, strategy="window")) as http:
        openai = OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=http,
                        max_retries=0)
        header = {"X-Chatmem-Conversation": quote("用量")}  # as the README says
        plain = list(openai.chat.completions.create(
            model="scripted", stream=True, extra_headers=header,
            messages=[{"role": "user", "content": "你好，今天天气怎么样？"}]))
        asked = list(openai.chat.completions.create(
            model="scripted", stream=True, extra_headers=header,
            stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "明天呢？"}]))
        refused = http.post("/v1/chat/completions", headers=header, json={
            "model": "scripted", "stream": True, "stream_options": {"include_usage": "yes"},
            "messages": [{"role": "user", "content": "后天呢？"}]})
    assert all(chunk.usage is None and chunk.choices for chunk in plain)
    assert plain[-1].choices[0].finish_reason == "stop"
    *reply, last = asked
    assert all(chunk.usage is None and chunk.choices for chunk in reply)
    assert reply[-1].choices[0].finish_reason == "stop"
    assert last.choices == [] and last.usage is not None
    assert last.usage.prompt_tokens > 0 and last.usage.completion_tokens > 0
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "stream_options"
