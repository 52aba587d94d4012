"""Through `chatmem serve`: a reasoning model's request fields and its replies that carry no
text (a refusal, a cap spent thinking, a content filter), and the request fields passed on,
taken without being sent, or refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from openai import OpenAI
from test_proxy import RunningProxy

from chatmem.config.settings import Settings
from chatmem.store import Store


@pytest.fixture
def proxy(chat_server: ChatServer, db_path: Path) -> Iterator[RunningProxy]:
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="o4-mini",
                        db=str(db_path), max_retries=0)
    with RunningProxy(settings, strategy="window") as running:
        yield running


def client(proxy: RunningProxy) -> OpenAI:
    return OpenAI(base_url=proxy.base_url, api_key="unused", max_retries=0, timeout=HANG)


def post(proxy: RunningProxy, conversation: str, **fields: Any) -> httpx.Response:
    return httpx.post(f"{proxy.base_url}/chat/completions", timeout=HANG,
                      headers={"X-Chatmem-Conversation": conversation},
                      json={"model": "o4-mini", "messages": [
                          {"role": "user", "content": "你好"}], **fields})


def test_a_reasoning_model_that_refuses_max_tokens_answers(
        proxy: RunningProxy, chat_server: ChatServer) -> None:
    """OpenAI's o1/o3/o4-mini/gpt-5 answer max_tokens with a 400: every request was a 502."""
    chat_server.refuses = "max_tokens"
    answer = client(proxy).chat.completions.create(
        model="o4-mini", messages=[{"role": "user", "content": "hi"}],
        max_completion_tokens=2, extra_headers={"X-Chatmem-Conversation": "o4"})
    assert answer.choices[0].message.content == "Hello from"
    assert answer.choices[0].finish_reason == "length"
    assert chat_server.requests[-1].get("max_completion_tokens") == 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(("mode", "content", "finish"), [
    ("refusal", "I'm sorry, I can't help with that.", "stop"),
    ("thought-to-the-cap", "", "length"),
    ("filtered-empty", "", "content_filter"),
    ("filtered", "Hello from the test server.", "content_filter"),
])
def test_a_reply_without_text_or_cut_short_is_answered_with_why_it_ended(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path, stream: bool,
        mode: str, content: str, finish: str) -> None:
    """A refusal and a cap spent thinking were a 502 ("the upstream model failed", which the
    SDK retries three times); a filtered reply ended "stop"."""
    chat_server.plan = [mode]
    openai = client(proxy)
    ask = {"model": "o4-mini", "messages": [{"role": "user", "content": "想一想"}],
           "extra_headers": {"X-Chatmem-Conversation": f"{mode}-{stream}"}}
    if stream:
        chunks = [c for c in openai.chat.completions.create(stream=True, **ask) if c.choices]
        said = "".join(c.choices[0].delta.content or "" for c in chunks)
        ended = [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason]
    else:
        answer = openai.chat.completions.create(**ask)
        said, ended = answer.choices[0].message.content or "", [answer.choices[0].finish_reason]
    assert (said, ended) == (content, [finish])
    with Store(db_path) as store:
        stored = store.history.messages(store.sessions.session(f"{mode}-{stream}").id)
    assert [m.content for m in stored] == ["想一想", content]


def test_fields_that_only_shape_the_models_work_are_passed_on(
        proxy: RunningProxy, chat_server: ChatServer) -> None:
    """reasoning_effort, service_tier, top_k, min_p and repetition_penalty were dropped unsaid;
    parallel_tool_calls and a text-only modalities ask nothing here (tools are refused)."""
    passed = {"reasoning_effort": "low", "verbosity": "low", "service_tier": "flex",
              "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1}
    answer = post(proxy, "passed", **passed, parallel_tool_calls=False, modalities=["text"],
                  logprobs=False, top_logprobs=0)
    assert answer.status_code == 200, answer.text
    sent = chat_server.requests[-1]
    assert {key: sent.get(key) for key in passed} == passed
    assert not {"parallel_tool_calls", "modalities", "logprobs", "top_logprobs"} & sent.keys()


@pytest.mark.parametrize(("conversation", "asked", "passed"), [
    # chat_template_kwargs (vLLM, SGLang, llama.cpp's server: Qwen3's enable_thinking),
    # OpenRouter's reasoning and llama.cpp's and Ollama's repeat_penalty were dropped unsaid: a
    # model asked not to think thought all the same.
    ("template", "不用想，直接回答", {"chat_template_kwargs": {"enable_thinking": False},
                                   "reasoning": {"effort": "low", "exclude": True},
                                   "repeat_penalty": 1.1}),
    # typical_p and min_tokens (llama.cpp's server, vLLM, text-generation-webui, as
    # SillyTavern sends them) were dropped unsaid: the reply was sampled as not asked.
    ("samplers", "写一首短诗", {"typical_p": 0.9, "min_tokens": 8, "mirostat": 2,
                             "mirostat_tau": 5.0, "repeat_last_n": 64, "dry_multiplier": 0.8,
                             "xtc_probability": 0.5}),
])
def test_a_servers_own_fields_are_passed_on(
        proxy: RunningProxy, chat_server: ChatServer, conversation: str, asked: str,
        passed: dict[str, Any]) -> None:
    """Fields only a local or routing server reads (its template's, its samplers) go to it as
    the client sent them."""
    answer = client(proxy).chat.completions.create(
        model="o4-mini", messages=[{"role": "user", "content": asked}],
        extra_body=passed, extra_headers={"X-Chatmem-Conversation": conversation})
    assert answer.choices[0].message.content == "Hello from the test server."
    sent = chat_server.requests[-1]
    assert {key: sent.get(key) for key in passed} == passed


def test_a_sampler_openai_does_not_take_is_a_400_naming_it(
        proxy: RunningProxy, chat_server: ChatServer) -> None:
    """OpenAI refuses a field it does not know naming it in its words only (`param` null)."""
    chat_server.refuses = "typical_p"
    chat_server.refused_as = ("Unrecognized request argument supplied: typical_p", "")
    answer = post(proxy, "openai-refuses", typical_p=0.9)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "typical_p"


@pytest.mark.parametrize(("fields", "param", "message"), [
    ({"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}},
     "audio", "audio is not returned through chatmem; ask the model directly"),
    ({"modalities": ["text", "audio"]}, "modalities",
     'only text is returned through chatmem: modalities may be ["text"]; ask the model '
     "directly for audio"),
    ({"web_search_options": {}}, "web_search_options",
     "a web search's citations are not returned through chatmem; ask the model directly"),
    ({"prediction": {"type": "content", "content": "abc"}}, "prediction",
     "a predicted output's accepted and rejected tokens are not returned through chatmem; "
     "ask the model directly"),
    ({"top_k": -1}, "top_k", "top_k must be between 0 and 1e+06, got -1"),
    ({"min_p": 1.5}, "min_p", "min_p must be between 0 and 1, got 1.5"),
    # A value out of range is shown cut (it was echoed whole: 300 digits here).
    ({"top_k": -int("9" * 300)}, "top_k",
     f"top_k must be between 0 and 1e+06, got -{'9' * 38}…"),
    # A seed past what OpenAI's API takes (64 bits) was passed on as it came.
    ({"seed": 2**64}, "seed",
     "seed must be a whole number from -2**63 to 2**63-1, got 18446744073709551616"),
    ({"seed": -int("9" * 300)}, "seed",
     f"seed must be a whole number from -2**63 to 2**63-1, got -{'9' * 38}…"),
    ({"repetition_penalty": "1.1"}, "repetition_penalty",
     "repetition_penalty must be a finite number"),
    ({"reasoning_effort": 3}, "reasoning_effort", 'reasoning_effort must be a string, e.g. "low"'),
    ({"chat_template_kwargs": "enable_thinking=false"}, "chat_template_kwargs",
     'chat_template_kwargs must be an object, e.g. {"enable_thinking": false}'),
    ({"repeat_penalty": True}, "repeat_penalty", "repeat_penalty must be a finite number"),
    ({"typical_p": "0.9"}, "typical_p", "typical_p must be a finite number"),
    ({"min_tokens": 1.5}, "min_tokens", "min_tokens must be a whole number"),
    ({"parallel_tool_calls": "no"}, "parallel_tool_calls",
     "parallel_tool_calls must be true or false"),
])
def test_fields_asking_for_what_chatmem_cannot_return_are_refused(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path, fields: dict[str, Any],
        param: str, message: str) -> None:
    """An audio reply, a web search's citations and a prediction were accepted and dropped
    unsaid: the client got text it took for what it asked."""
    answer = post(proxy, "refused", **fields)
    assert answer.status_code == 400, answer.text
    assert (answer.json()["error"]["param"], answer.json()["error"]["message"]) == (
        param, message)
    assert chat_server.requests == []
    with Store(db_path) as store:
        assert store.sessions.find_session("refused") is None
