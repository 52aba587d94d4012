"""What a request asks of the model (max_tokens, stop, sampling, its system messages) holds
for its own reply: memory's summaries are asked as the server is configured, and the next
request is sent with its own system prompt, not this one's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from plugin_site import CAPPED, Install
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings
from chatmem.memory.summarizer import DEFAULT_PROMPT
from chatmem.store import Store

PASSED = {"stop": ["zzz"], "temperature": 0.3, "seed": 7, "logit_bias": {"50256": -100},
          "response_format": {"type": "json_object"}}


def ask(proxy: RunningProxy, conversation: str, messages: list[dict[str, Any]],
        **fields: Any) -> httpx.Response:
    answer = httpx.post(f"{proxy.base_url}/chat/completions", timeout=HANG,
                        headers={"X-Chatmem-Conversation": conversation},
                        json={"model": "test-small", "messages": messages, **fields})
    assert answer.status_code == 200, answer.text
    return answer


def summary_requests(chat_server: ChatServer) -> list[dict[str, Any]]:
    opening = DEFAULT_PROMPT[:40]
    return [r for r in chat_server.requests
            if any(opening in str(m.get("content")) for m in r.get("messages", ()))]


def test_a_requests_options_reach_its_reply_and_not_the_summary_memory_stores(
        chat_server: ChatServer, db_path: Path) -> None:
    """Every summary of a conversation whose client sent max_tokens 2 was the model's first
    two words, stored and sent again on each later turn."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="summary-buffer:max_tokens=120") as proxy:
        for i in range(8):
            said = f"第{i}条消息：关于话题{i}的一段足够长的文字，好让缓冲区很快装满。" * 2
            reply = ask(proxy, "opt1", [{"role": "user", "content": said}],
                        max_tokens=2, **PASSED)
            assert reply.json()["choices"][0]["message"]["content"] == "Hello from"
    summarized = summary_requests(chat_server)
    assert summarized, "the conversation was never summarized"
    for request in summarized:
        assert request["max_tokens"] == 4096
        assert not PASSED.keys() & request.keys()
    replies = [r for r in chat_server.requests if r not in summarized]
    assert all(r["max_tokens"] == 2 and PASSED.items() <= r.items() for r in replies)
    with Store(db_path) as store:
        summaries = store.memory.summaries(store.sessions.session("opt1").id)
    assert summaries and all(s.text == "Hello from the test server." for s in summaries)


def test_a_request_without_system_messages_is_not_sent_an_earlier_ones(
        chat_server: ChatServer, db_path: Path) -> None:
    """The second request reached the model with the first one's RAG documents as its system
    prompt, and each request's became the session's (shown, and resumed by a chat)."""
    docs = "Relevant docs: 门禁密码是 4711。"
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), system="Be brief.")
    with RunningProxy(settings, strategy="window") as proxy:
        ask(proxy, "sys1", [{"role": "system", "content": docs},
                            {"role": "user", "content": "开门吗？"}])
        first = chat_server.requests[-1]["messages"]
        ask(proxy, "sys1", [{"role": "user", "content": "说点别的"}])
        second = chat_server.requests[-1]["messages"]
        ask(proxy, "sys1", [{"role": "system", "content": ""},
                            {"role": "user", "content": "第三"}])
        third = chat_server.requests[-1]["messages"]
    assert first[0] == {"role": "system", "content": docs}
    assert second[0] == {"role": "system", "content": "Be brief."}  # the configured prompt
    assert all(m["role"] != "system" for m in third)  # an empty one is none, as /system ""
    assert "4711" not in str(second) + str(third)
    with Store(db_path) as store:
        assert store.sessions.session("sys1").system == "Be brief."


def test_text_parts_are_joined_as_lines_and_a_null_max_completion_tokens_is_not_given(
        chat_server: ChatServer, db_path: Path) -> None:
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    parts = [{"type": "text", "text": "第一段。"}, {"type": "text", "text": "Second paragraph."}]
    with RunningProxy(settings, strategy="window") as proxy:
        ask(proxy, "parts", [{"role": "user", "content": parts}],
            max_completion_tokens=None, max_tokens=3)
        sent = chat_server.requests[-1]
        refused = httpx.post(f"{proxy.base_url}/chat/completions", timeout=HANG,
                             headers={"X-Chatmem-Conversation": "parts"},
                             json={"model": "test-small", "max_completion_tokens": 0,
                                   "messages": [{"role": "user", "content": "hi"}]})
    assert sent["max_tokens"] == 3
    assert sent["messages"][-1] == {"role": "user", "content": "第一段。\nSecond paragraph."}
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "max_completion_tokens"
    assert refused.json()["error"]["message"] == \
        "max_completion_tokens must be a whole number of 1 or more"
    with Store(db_path) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("parts").id)]
    assert said[0] == "第一段。\nSecond paragraph."


def test_a_requests_max_tokens_reaches_a_plugin_chat_provider(installed: Install,
                                                               db_path: Path) -> None:
    """A plugin provider is told the reply cap as settings.max_reply_tokens: since options
    stopped overwriting it, one served with max_tokens 5 saw the configured 800."""
    from starlette.testclient import TestClient

    from chatmem.serve.proxy import build_app

    installed("chatmem-capped", "chatmem_capped", CAPPED, name="capped")
    app = build_app(Settings(provider="capped", db=str(db_path), max_reply_tokens=800),
                    strategy="window")
    with TestClient(app) as http:
        said = [http.post("/v1/chat/completions", headers={"X-Chatmem-Conversation": "cap"},
                          json={"model": "capped", "messages": [
                              {"role": "user", "content": f"第{n}问"}], **cap}
                          ).json()["choices"][0]["message"]["content"]
                for n, cap in enumerate(({"max_tokens": 5}, {}, {"max_completion_tokens": 7}))]
    assert said == ["上限 5", "上限 800", "上限 7"]


def test_no_stop_words_and_a_cap_of_minus_one_ask_for_nothing(
        chat_server: ChatServer, db_path: Path) -> None:
    """SillyTavern sends `"stop": []` when no stop words are set, and clients written for LM
    Studio or llama.cpp `"max_tokens": -1` for no cap: each was a 400, every request of such
    a client refused. They ask for nothing: the configured cap holds, no stop is sent."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), max_reply_tokens=77)
    with RunningProxy(settings, strategy="window") as proxy:
        ask(proxy, "tavern", [{"role": "user", "content": "你好"}], stop=[], max_tokens=-1)
        sent = chat_server.requests[-1]
    assert "stop" not in sent
    assert sent["max_tokens"] == 77


def test_more_than_four_stop_words_reach_the_model_as_given(
        chat_server: ChatServer, db_path: Path) -> None:
    """SillyTavern's group chats stop at each member's name, and Continue at a local model's
    template markers: more than OpenAI's 4, which llama.cpp, vLLM and Ollama take. Each
    request of such a client was refused (400, stop) before the model saw it, whatever it
    takes; the model's own refusal is passed on naming the field, as for any field."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    stop = ["\nAlice:", "\nBob:", "\n小明：", "\n小红：", "<|eot_id|>", "<|im_end|>"]
    with RunningProxy(settings, strategy="window") as proxy:
        ask(proxy, "group", [{"role": "user", "name": "Alice", "content": "大家好"}], stop=stop)
        assert chat_server.requests[-1]["stop"] == stop
        chat_server.refuses = "stop"  # as api.openai.com refuses a fifth
        refused = httpx.post(f"{proxy.base_url}/chat/completions", timeout=HANG,
                             headers={"X-Chatmem-Conversation": "group"},
                             json={"model": "test-small", "stop": stop, "messages": [
                                 {"role": "user", "name": "Bob", "content": "Hi all"}]})
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "stop"


def test_requests_with_options_of_their_own_share_their_conversations_engine(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request's options were part of its kept engine's key: a client sending a seed of
    its own each time had its conversation opened anew on every request, every stored
    vector read again (0.6 s of CPU a request at 10,000 turns) and the other conversations
    pushed out. Each request's options still reach its own reply alone."""
    from urllib.parse import quote

    from chatmem.app import conversations
    from chatmem.config.sections import EmbeddingsSection
    from chatmem.embeddings.hashed import HashEmbedder
    from chatmem.memory.indexing import Indexing
    from chatmem.store.vectors import VectorTables

    opened: list[str | None] = []
    start = conversations.start_conversation

    def counted(ws: Any, name: str | None, **options: Any) -> Any:
        opened.append(name)
        return start(ws, name, **options)

    read: list[int] = []
    batch = VectorTables.vector_batch

    def reading(self: VectorTables, *args: Any, **kwargs: Any) -> Any:
        found = batch(self, *args, **kwargs)
        read.append(len(found.positions))
        return found

    with Store(db_path) as store:  # a conversation whose 40 messages have their vectors
        session = store.sessions.create_session("储物柜", "retrieval", {"recent": 1},
                                                provider="openai", model="test-small")
        store.history.import_messages(session.id, [
            {"role": role, "content": f"第{n}轮：储物柜 {n} 号 / locker {n}, order ORD-{n}."}
            for n in range(20) for role in ("user", "assistant")])
        Indexing(store, session.id, background=False).finish(HashEmbedder())
    monkeypatch.setattr(conversations, "start_conversation", counted)
    monkeypatch.setattr(VectorTables, "vector_batch", reading)
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), embeddings=EmbeddingsSection(provider="hash"))
    asked: list[dict[str, Any]] = [
        {"seed": 1}, {"seed": 2, "temperature": 0.2}, {}, {"seed": 3, "max_tokens": 9},
        {"seed": 4}, {}]
    said = ["我的储物柜是 17 号，在窗边。", "My order is ORD-7731.", "它什么时候到？",
            "The boat cost 300 euros.", "储物柜在哪里？", "What was my order?"]
    with RunningProxy(settings, strategy="retrieval:recent=1") as proxy:
        for text, fields in zip(said, asked, strict=True):
            ask(proxy, quote("储物柜"), [{"role": "user", "content": text}], **fields)
    assert opened == ["储物柜"]
    sent = [r for r in chat_server.requests if r["messages"][-1]["content"] in said]
    assert [r["messages"][-1]["content"] for r in sent] == said
    for request, fields in zip(sent, asked, strict=True):
        assert request.get("seed") == fields.get("seed")
        assert request.get("temperature") == fields.get("temperature")
        assert request["max_tokens"] == fields.get("max_tokens", 4096)
    # The stored vectors are read once, then only those of the turns since: an engine
    # opened anew read all 40 again.
    assert read[0] == 40 and sum(read[1:]) <= 2 * len(said)
