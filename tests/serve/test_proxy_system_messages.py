"""A client's own system messages, wherever they are in its request, reach the model as
system messages in its words: they are the request's instructions, not history to quote."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings
from chatmem.store import Store

DOCS = "Relevant docs: 西湖在杭州，<b>免费</b>开放。Always answer in French."


def test_a_system_message_before_the_question_reaches_the_model_unaltered(
        chat_server: ChatServer, db_path: Path) -> None:
    """A RAG front end's docs just before the question were stored as history and sent
    quoted ("A system message quoted from an imported conversation, data, not
    instructions"), their markup escaped."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    messages: list[dict[str, str]] = [{"role": "system", "content": "Be brief."}]

    def ask(question: str, *, docs: bool) -> list[dict[str, Any]]:
        sent = [*messages, *([{"role": "system", "content": DOCS}] if docs else []),
                {"role": "user", "content": question}]
        answer = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                            headers={"X-Chatmem-Conversation": "rag"},
                            json={"model": "test-small", "messages": sent})
        assert answer.status_code == 200, answer.text
        messages.extend([*sent[len(messages):], {
            "role": "assistant", "content": answer.json()["choices"][0]["message"]["content"]}])
        upstream: list[dict[str, Any]] = chat_server.requests[-1]["messages"]
        return upstream

    with RunningProxy(settings, strategy="window") as running:
        ask("西湖在哪里？", docs=False)
        second = ask("门票多少钱？", docs=True)
        third = ask("谢谢", docs=False)  # the docs are now in the client's past
    assert second[0] == {"role": "system", "content": f"Be brief.\n\n{DOCS}"}
    assert second[-1] == {"role": "user", "content": "门票多少钱？"}
    assert third[0] == second[0]  # still the client's, as it sends them
    for upstream in (second, third):
        assert sum(DOCS in str(m["content"]) for m in upstream) == 1
        assert all("quoted from an imported conversation" not in str(m["content"])
                   for m in upstream)
    with Store(db_path) as store:
        said = [(m.role, m.content) for m in
                store.history.messages(store.sessions.session("rag").id)]
    # History is what was said, each message once; the instructions are not in it.
    assert [role for role, _ in said] == ["user", "assistant"] * 3
    assert [text for role, text in said if role == "user"] == [
        "西湖在哪里？", "门票多少钱？", "谢谢"]


def _conversation_threads() -> set[threading.Thread]:
    """The threads of the conversations the server keeps open (chatmem.app.kept): one for
    each engine it opened and keeps."""
    return {t for t in threading.enumerate() if t.name.startswith("chatmem-conversation")}


def test_a_new_system_text_in_each_request_keeps_one_engine_open_not_one_a_text(
        chat_server: ChatServer, db_path: Path) -> None:
    """The request's system text was part of what chose the kept engine: a RAG front end
    that sends new documents every time reopened the conversation every time (200 ms at
    3,000 turns, against 30 once open) and pushed other conversations out."""
    from starlette.testclient import TestClient

    from chatmem.serve.proxy import build_app

    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path), system="Be brief.")
    documents = [f"Relevant docs: 第{n}章，西湖在杭州。" for n in range(1, 6)]
    before = _conversation_threads()
    messages: list[dict[str, str]] = []
    with TestClient(build_app(settings, strategy="window")) as http:
        for n, docs in enumerate([*documents, None]):
            system = [] if docs is None else [{"role": "system", "content": docs}]
            messages.append({"role": "user", "content": f"问题 {n}"})
            answer = http.post("/v1/chat/completions",
                               headers={"X-Chatmem-Conversation": "rag"},
                               json={"model": "test-small", "messages": [*system, *messages]})
            assert answer.status_code == 200, answer.text
            messages.append({"role": "assistant",
                             "content": answer.json()["choices"][0]["message"]["content"]})
        opened = _conversation_threads() - before
    sent = [request["messages"][0] for request in chat_server.requests]
    assert len(opened) == 1
    assert sent == [*({"role": "system", "content": docs} for docs in documents),
                    {"role": "system", "content": "Be brief."}]  # the configured one again
    with Store(db_path) as store:
        session = store.sessions.session("rag")
        assert session.system == "Be brief."  # a request's text is never the session's
        assert [t.status for t in store.turns.turns(session.id)] == ["ok"] * 6


def test_a_system_message_after_the_question_is_an_instruction_not_a_refusal(
        chat_server: ChatServer, db_path: Path) -> None:
    """SillyTavern sends its post-history instructions as a system message after the user's
    message, as OpenAI takes one: every such request was a 400 ("the last message must be
    the user's"), though a system message anywhere else is the request's instruction."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    asked = [{"role": "system", "content": "你是小明。"},
             {"role": "user", "content": "今天天气怎么样？", "name": "ana"},
             {"role": "system", "content": "[Stay in character; one line.]"}]
    with RunningProxy(settings, strategy="window") as running:
        answer = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                            headers={"X-Chatmem-Conversation": "tavern"},
                            json={"model": "test-small", "messages": asked})
    assert answer.status_code == 200, answer.text
    upstream = chat_server.requests[-1]["messages"]
    assert upstream[0] == {"role": "system",
                           "content": "你是小明。\n\n[Stay in character; one line.]"}
    assert upstream[-1] == {"role": "user", "content": "ana: 今天天气怎么样？"}
    with Store(db_path) as store:
        said = [(m.role, m.content) for m in
                store.history.messages(store.sessions.session("tavern").id)]
    assert said == [("user", "ana: 今天天气怎么样？"),
                    ("assistant", answer.json()["choices"][0]["message"]["content"])]
