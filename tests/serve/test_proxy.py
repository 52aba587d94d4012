"""`chatmem serve` with the official openai client: real HTTP both ways (the proxy on a port of
its own, the upstream a small OpenAI-compatible server started by the test)."""

from __future__ import annotations

import copy
import gc
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from chat_server import ChatServer
from cli_runner import output
from other_account import NOBODY, needs_root, status_as_nobody
from waiting import HANG, Watched, wait_until

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
import uvicorn
from openai import OpenAI

from chatmem.app.model_pool import ModelPool
from chatmem.config.settings import Settings
from chatmem.serve.connections import Limits
from chatmem.serve.guards import guarded
from chatmem.serve.listening import Listening, TokenMade, listening, server_config
from chatmem.serve.peers import PROC_NET
from chatmem.serve.proxy import Proxy, build_app
from chatmem.serve.tokens_file import TokensFile
from chatmem.store import Store


class RunningProxy:
    def __init__(self, settings: Settings, token: str | None = None,
                 strategy: str | None = None,
                 tokens: dict[str, str] | TokensFile | None = None,
                 accounts: Path = PROC_NET, origins: frozenset[str] = frozenset(),
                 limits: Limits | None = None) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.refused: list[str] = []
        self.logged: list[str] = []
        """What the server's log heard of the model's failures."""
        # As `chatmem serve` runs it: behind the token, or else this account's only.
        app = guarded(build_app(settings, strategy=strategy, log=self.logged.append),
                      Listening("127.0.0.1", self.port, token, accounts=accounts), tokens,
                      refused=self.refused.append, origins=origins)
        self.server = uvicorn.Server(server_config(app, limits))
        self.thread = threading.Thread(target=self.server.run,
                                       kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> RunningProxy:
        self.thread.start()
        wait_until(lambda: self.server.started, "the proxy listens")
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(HANG)
        self.sock.close()


@pytest.fixture
def upstream_settings(chat_server: ChatServer, db_path: Path) -> Settings:
    return Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                    db=str(db_path), system="Be brief.")


@pytest.fixture
def proxy(upstream_settings: Settings) -> Iterator[RunningProxy]:
    with RunningProxy(upstream_settings, strategy="window") as running:
        yield running


def client(proxy: RunningProxy) -> OpenAI:
    return OpenAI(base_url=proxy.base_url, api_key="unused", max_retries=0, timeout=HANG)


def statuses(db: Path, conversation: str) -> list[str] | None:
    """The statuses of the conversation's turns, oldest first; None before it exists."""
    with Store(db) as store:
        session = store.sessions.find_session(conversation)
        return None if session is None else [t.status for t in store.turns.turns(session.id)]


def inspect_json(db: Path, *args: str) -> dict[str, Any]:
    """`chatmem inspect ARGS --json` in process: the command's own path, without the ~1 s
    (more on a loaded machine) of starting a Python that imports chatmem."""
    return json.loads(output("inspect", *args, "--json", "--db", str(db)))


def test_three_requests_are_three_turns_that_inspect_and_the_api_agree_on(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    openai = client(proxy)
    header = {"X-Chatmem-Conversation": "trip"}
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    turn_ids = []
    for n, question in enumerate(["My order is ORD-7731.", "It arrived broken.",
                                  "What was my order?"], 1):
        messages.append({"role": "user", "content": question})
        sent = copy.deepcopy(messages)
        raw = openai.chat.completions.with_raw_response.create(
            model="test-small", messages=messages, extra_headers=header, stream=n == 2)
        turn_ids.append(raw.headers["x-chatmem-turn"])
        if n == 2:
            reply = "".join(chunk.choices[0].delta.content or ""
                            for chunk in raw.parse() if chunk.choices)
        else:
            reply = raw.parse().choices[0].message.content
        assert messages == sent  # the caller's messages are never changed
        assert reply == "Hello from the test server."
        messages.append({"role": "assistant", "content": reply})
    assert turn_ids == ["trip@1", "trip@2", "trip@3"]
    with Store(db_path) as store:
        session = store.sessions.session("trip")
        assert store.history.turn_count(session.id) == 3
    for turn_id in turn_ids:
        number = turn_id.split("@")[1]
        served = httpx.get(f"{proxy.base_url}/chatmem/turns/{turn_id}", timeout=HANG).json()
        assert served == inspect_json(db_path, "trip", number)
    # Under window, the second request sent the first turn as history.
    second = chat_server.requests[1]["messages"]
    assert [m["content"] for m in second] == [
        "Be brief.", "My order is ORD-7731.", "Hello from the test server.",
        "It arrived broken."]


def test_a_conversation_stays_open_between_requests_and_follows_other_processes(
        upstream_settings: Settings, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A conversation's engine is opened once, not per request (recall's caches then live
    between requests); a purge by another process reaches the next request's context, and
    a session deleted meanwhile is started anew from the client's history."""
    import dataclasses

    from chatmem.app import conversations
    from chatmem.config.sections import EmbeddingsSection

    opened: list[str | None] = []
    start = conversations.start_conversation

    def counted(ws: Any, name: str | None, **options: Any) -> Any:
        opened.append(name)
        return start(ws, name, **options)

    monkeypatch.setattr(conversations, "start_conversation", counted)
    settings = dataclasses.replace(upstream_settings,
                                   embeddings=EmbeddingsSection(provider="hash"))
    header = {"X-Chatmem-Conversation": "trip"}
    said = ["My friend José lives in Porto.", "我们五月去杭州，订了西湖边的酒店。",
            "The boat cost 300 euros.", "Where does my friend live?"]
    with RunningProxy(settings, strategy="retrieval:recent=1") as running:
        openai = client(running)

        def ask(text: str) -> str:
            raw = openai.chat.completions.with_raw_response.create(
                model="test-small", messages=[{"role": "user", "content": text}],
                extra_headers=header)
            return raw.headers["x-chatmem-turn"]

        assert [ask(text) for text in said] == ["trip@1", "trip@2", "trip@3", "trip@4"]
        assert opened == ["trip"]
        with Store(db_path) as other:
            sid = other.sessions.session("trip").id
            other.redactions.rewrite_stored_text([sid], None, ["José"],
                                                 lambda t: t.replace("José", "[erased]"))
        ask("Who lives in Porto?")
        recalled = inspect_json(db_path, "trip", "5")["context"]["parts"]
        assert "[erased] lives in Porto" in json.dumps(recalled, ensure_ascii=False)
        assert "José" not in json.dumps(recalled, ensure_ascii=False)
        with Store(db_path) as other:
            other.sessions.delete_session("trip")
        assert ask("Are you there?") == "trip@1"
    assert opened == ["trip", "trip"]


def test_a_conversation_without_a_header_is_found_by_user_or_by_how_it_began(
        proxy: RunningProxy, db_path: Path) -> None:
    openai = client(proxy)
    openai.chat.completions.create(model="test-small", user="ann-42",
                                   messages=[{"role": "user", "content": "hi"}])
    first = [{"role": "user", "content": "Plan a trip to 杭州."}]
    reply = openai.chat.completions.create(model="test-small", messages=first)
    again = [*first, {"role": "assistant", "content": reply.choices[0].message.content},
             {"role": "user", "content": "And the budget?"}]
    openai.chat.completions.create(model="test-small", messages=again)
    with Store(db_path) as store:
        names = {row.name: row.turns for row in store.sessions.list_sessions()}
    assert names.pop("ann-42") == 1
    [(fingerprint, turns)] = names.items()
    assert fingerprint.startswith("chat-") and turns == 2


def test_a_metadata_id_that_is_not_a_string_or_a_number_is_a_400_naming_it(
        proxy: RunningProxy, db_path: Path) -> None:
    url = f"{proxy.base_url}/chat/completions"
    refused = httpx.post(url, timeout=HANG, json={
        "model": "test-small", "metadata": {"chat_id": {"a": 1}},
        "messages": [{"role": "user", "content": "去杭州"}]})
    taken = httpx.post(url, timeout=HANG, json={
        "model": "test-small", "metadata": {"chat_id": 20261205},
        "messages": [{"role": "user", "content": "去杭州"}]})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "metadata.chat_id must be a string or a number"
    assert refused.json()["error"]["param"] == "metadata"
    assert taken.status_code == 200
    with Store(db_path) as store:
        assert [row.name for row in store.sessions.list_sessions()] == ["20261205"]


def test_each_conversation_id_is_its_own_session_in_any_script(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """Ids that a name made by replacing what a name cannot hold would merge (Chinese sent
    as UTF-8, read by the server as Latin-1; punctuation; a long common start) each get a
    session of their own, and the percent-encoded name a response carries finds it again."""

    def ask(conversation: bytes, text: str) -> httpx.Response:
        reply = httpx.post(f"{proxy.base_url}/chat/completions", timeout=HANG, json={
            "model": "test-small", "messages": [{"role": "user", "content": text}]},
            headers={"X-Chatmem-Conversation": conversation})
        assert reply.status_code == 200, reply.text
        return reply

    first = ask("旅行".encode(), "我的护照号是 E12345678。")
    assert first.headers["X-Chatmem-Conversation"] == "%E6%97%85%E8%A1%8C"
    ask("日记".encode(), "今天写什么？")
    assert "E12345678" not in json.dumps(chat_server.requests[-1], ensure_ascii=False)
    again = ask(first.headers["X-Chatmem-Conversation"].encode(), "护照号是多少？")
    assert again.headers["X-Chatmem-Turn"].endswith("@2")
    assert "E12345678" in json.dumps(chat_server.requests[-1], ensure_ascii=False)
    for conversation in (b"!!!", b"???", b"x" * 64 + b"-alice", b"x" * 64 + b"-bob"):
        ask(conversation, "hello")
    with Store(db_path) as store:
        sessions = {row.name: row.turns for row in store.sessions.list_sessions()}
    assert sessions.pop("旅行") == 2 and sessions.pop("日记") == 1
    assert len(sessions) == 4 and set(sessions.values()) == {1}


def test_a_fingerprint_tells_two_system_prompts_apart(proxy: RunningProxy,
                                                      db_path: Path) -> None:
    openai = client(proxy)
    for system in ("You are a pirate.", "你是律师。"):
        openai.chat.completions.create(model="test-small", messages=[
            {"role": "system", "content": system}, {"role": "user", "content": "hi"}])
    with Store(db_path) as store:
        rows = store.sessions.list_sessions()
    assert len(rows) == 2 and all(r.name.startswith("chat-") and r.turns == 1
                                  for r in rows)


def test_chats_without_an_id_that_began_alike_never_see_each_others_messages(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """A client with no id sends its whole history each time; two chats that open with the
    same words are told apart by it, and each goes on in its own session."""
    openai = client(proxy)
    system = {"role": "system", "content": "You are a helpful assistant."}

    def ask(messages: list[dict[str, str]]) -> tuple[list[dict[str, str]], str]:
        reply = openai.chat.completions.with_raw_response.create(model="test-small",
                                                                 messages=messages)
        said = reply.parse().choices[0].message.content or ""
        return [*messages, {"role": "assistant", "content": said}], reply.headers[
            "X-Chatmem-Turn"]

    a, _ = ask([system, {"role": "user", "content": "你好"}])
    a, a_turn = ask([*a, {"role": "user", "content": "我的银行卡密码提示是：小狗叫旺财"}])
    b, b_turn = ask([system, {"role": "user", "content": "你好"}])
    assert "旺财" not in json.dumps(chat_server.requests[-1], ensure_ascii=False)
    assert b_turn.endswith("@1") and a_turn.endswith("@2")
    assert b_turn.split("@")[0] != a_turn.split("@")[0]
    b, b_turn = ask([*b, {"role": "user", "content": "今天天气如何？"}])
    assert "旺财" not in json.dumps(chat_server.requests[-1], ensure_ascii=False)
    assert b_turn.endswith("@2")
    a, a_turn = ask([*a, {"role": "user", "content": "提示是什么？"}])
    assert "旺财" in json.dumps(chat_server.requests[-1], ensure_ascii=False)
    assert a_turn.endswith("@3")
    # Asked again (a regenerate) it stays in its session and replaces that turn.
    _, again = ask(a[:-1])
    assert again == f"{quote(a_turn.split('@')[0])}@3"  # the turn it replaced
    with Store(db_path) as store:
        turns = sorted(row.turns for row in store.sessions.list_sessions())
        replaced = [t.superseded_by for t in store.turns.turns(
            store.sessions.session(a_turn.split("@")[0]).id)]
    # Three turns in history: the regenerate took the replaced turn's place.
    assert turns == [2, 3] and replaced == [None, None, 4, None]


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_clients_reply_cap_reaches_the_model_and_a_reply_cut_there_says_length(
        proxy: RunningProxy, chat_server: ChatServer, field: str, stream: bool) -> None:
    chat_server.reply_words = ["一", "二", "三", "四", "五"]
    body = {"model": "test-small", "stream": stream, field: 2,
            "messages": [{"role": "user", "content": "数到五"}]}
    reply = httpx.post(f"{proxy.base_url}/chat/completions", json=body, timeout=HANG,
                       headers={"X-Chatmem-Conversation": f"cap-{field}-{stream}"})
    assert reply.status_code == 200, reply.text
    assert chat_server.requests[-1]["max_tokens"] == 2
    if stream:
        chunks = [json.loads(line[6:]) for line in reply.text.splitlines()
                  if line.startswith("data: {")]
        said = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks
                       if c.get("choices"))
        finishes = [c["choices"][0]["finish_reason"] for c in chunks if c.get("choices")]
        assert finishes[-1] == "length"
    else:
        said = reply.json()["choices"][0]["message"]["content"]
        assert reply.json()["choices"][0]["finish_reason"] == "length"
    assert said == "一二"
    # A reply that ends on its own says stop, under the same cap.
    chat_server.reply_words = ["好"]
    again = httpx.post(f"{proxy.base_url}/chat/completions", json={**body, "stream": False},
                       timeout=HANG, headers={"X-Chatmem-Conversation": f"cap-{field}-{stream}"})
    assert again.json()["choices"][0]["finish_reason"] == "stop"


def test_the_clients_history_is_authoritative_and_only_its_new_suffix_is_stored(
        proxy: RunningProxy, db_path: Path) -> None:
    # A client that had a conversation elsewhere first: its earlier messages are stored
    # once, before the turn, and a later request stores only what is new.
    openai = client(proxy)
    header = {"X-Chatmem-Conversation": "moved"}
    earlier = [{"role": "user", "content": "I live in Hangzhou."},
               {"role": "assistant", "content": "Noted."}]
    openai.chat.completions.create(model="test-small", extra_headers=header, messages=[
        *earlier, {"role": "user", "content": "Where do I live?"}])
    openai.chat.completions.create(model="test-small", extra_headers=header, messages=[
        *earlier, {"role": "user", "content": "Where do I live?"},
        {"role": "assistant", "content": "Hello from the test server."},
        {"role": "user", "content": "Thanks."}])
    with Store(db_path) as store:
        contents = [m.content for m in store.history.messages(store.sessions.session("moved").id)]
    assert contents == ["I live in Hangzhou.", "Noted.", "Where do I live?",
                        "Hello from the test server.", "Thanks.",
                        "Hello from the test server."]


def test_a_regenerate_or_an_edit_of_the_last_message_replaces_that_turn(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """The client's history is authoritative: asking its last exchange again (Open WebUI's
    regenerate, an edit of the last message) replaces that turn, as /retry does; the reply
    it dropped is sent to the model no more."""
    openai = client(proxy)
    header = {"X-Chatmem-Conversation": "again"}
    first = [{"role": "user", "content": "法国首都？"}]
    chat_server.reply_words = ["答案一：巴黎"]
    openai.chat.completions.create(model="test-small", extra_headers=header, messages=first)
    opened = [*first, {"role": "assistant", "content": "答案一：巴黎"},
              {"role": "user", "content": "人口多少？"}]
    openai.chat.completions.create(model="test-small", extra_headers=header, messages=opened)
    chat_server.reply_words = ["答案二：很多"]
    openai.chat.completions.create(model="test-small", extra_headers=header,
                                   messages=opened)  # regenerate
    assert "答案一：巴黎" in json.dumps(chat_server.requests[-1], ensure_ascii=False)
    assert json.dumps(chat_server.requests[-1], ensure_ascii=False).count("人口多少？") == 1
    edited = [*opened[:2], {"role": "user", "content": "巴黎人口多少？"}]
    openai.chat.completions.create(model="test-small", extra_headers=header, messages=edited)
    sent = json.dumps(chat_server.requests[-1], ensure_ascii=False)
    assert "人口多少？\"" not in sent.replace("巴黎人口多少？", "") and "答案二" not in sent
    with Store(db_path) as store:
        session = store.sessions.session("again")
        said = [m.content for m in store.history.messages(session.id)]
        replaced = [(t.number, t.superseded_by) for t in store.turns.turns(session.id)]
    assert said == ["法国首都？", "答案一：巴黎", "巴黎人口多少？", "答案二：很多"]
    assert replaced == [(1, None), (2, 3), (3, 4), (4, None)]
    # A session of messages imported without a turn (nothing of chatmem's to replace): the
    # request is a turn of its own, not a failed one.
    with Store(db_path) as store:
        imported = store.sessions.create_session("imported", "window")
        store.history.import_messages(imported.id, [
            {"role": "user", "content": "早"}, {"role": "user", "content": "吃了吗"},
            {"role": "assistant", "content": "吃了"}])
    openai.chat.completions.create(
        model="test-small", extra_headers={"X-Chatmem-Conversation": "imported"},
        messages=[{"role": "user", "content": "早"}, {"role": "user", "content": "吃了吗？"}])
    assert statuses(db_path, "imported") == ["ok"]


def test_a_regenerate_after_one_whose_model_call_failed_replaces_the_turn_once(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """The failed attempt's row became "the last turn", the next regenerate could not replace
    it and was stored as a turn of its own: memory held the question twice."""
    import openai as sdk

    openai = client(proxy)
    header = {"X-Chatmem-Conversation": quote("重来")}
    first = [{"role": "user", "content": "我们去杭州"}]
    reply = openai.chat.completions.create(model="test-small", extra_headers=header,
                                           messages=first)
    asked = [*first, {"role": "assistant", "content": reply.choices[0].message.content or ""},
             {"role": "user", "content": "去杭州的火车几点？"}]
    openai.chat.completions.create(model="test-small", extra_headers=header, messages=asked)
    chat_server.plan = ["401"]
    with pytest.raises(sdk.InternalServerError):  # a 502: the server's key, not the client's
        openai.chat.completions.create(model="test-small", extra_headers=header, messages=asked)
    openai.chat.completions.create(model="test-small", extra_headers=header, messages=asked)
    with Store(db_path) as store:
        session = store.sessions.session("重来")
        said = [m.content for m in store.history.messages(session.id) if m.role == "user"]
        turns = [(t.number, str(t.status), t.superseded_by)
                 for t in store.turns.turns(session.id)]
    assert said == ["我们去杭州", "去杭州的火车几点？"]
    assert turns == [(1, "ok", None), (2, "ok", 4), (3, "failed", None), (4, "ok", None)]


def test_an_exchange_another_front_end_added_is_not_replaced_by_the_clients_next_message(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """One exchange added by the CLI (or the REPL, or MCP) between two of a client's requests
    made the client's next message look like an edit of it: that exchange was marked replaced
    and left memory. The client never saw it; it is not the client's to replace."""
    from cli_runner import invoke

    openai = client(proxy)
    header = {"X-Chatmem-Conversation": quote("共享")}
    history = [{"role": "user", "content": "第一句：我要去云南"}]
    for said in ("第二句：预算三千", "第三句：住哪里好"):
        reply = openai.chat.completions.create(model="test-small", extra_headers=header,
                                               messages=history)
        history += [{"role": "assistant", "content": reply.choices[0].message.content or ""},
                    {"role": "user", "content": said}]
        if said.startswith("第二"):
            invoke("ask", "共享", "CLI插一句：顺便去大理", "--provider", "scripted",
                   "--db", str(db_path), code=0)
    openai.chat.completions.create(model="test-small", extra_headers=header, messages=history)
    with Store(db_path) as store:
        session = store.sessions.session("共享")
        said = [m.content for m in store.history.messages(session.id) if m.role == "user"]
        replaced = [t.superseded_by for t in store.turns.turns(session.id)]
    assert said == ["第一句：我要去云南", "CLI插一句：顺便去大理", "第二句：预算三千",
                    "第三句：住哪里好"]
    assert replaced == [None, None, None, None]


def test_retention_that_failed_is_tried_again_by_the_next_request_then_not_again(
        chat_server: ChatServer, upstream_settings: Settings, db_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses
    from datetime import UTC, datetime, timedelta

    from chatmem.errors import StoreError
    from chatmem.privacy import retention

    then = datetime.now(UTC) - timedelta(days=45)
    with Store(db_path, clock=lambda: then) as store:
        old = store.sessions.create_session("old", "window")
        store.history.import_messages(old.id, [{"role": "user", "content": "ZX-1001"}])
    calls: list[bool] = []
    prune = retention.prune

    def busy_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(True)
        if len(calls) == 1:  # the file busy at the first request
            raise StoreError(f"{db_path} is busy: another process held it for over 5 s")
        return prune(*args, **kwargs)

    monkeypatch.setattr(retention, "prune", busy_once)
    settings = dataclasses.replace(upstream_settings, retention_days=30)

    def sessions() -> set[str]:
        with Store(db_path) as store:
            return {row.name for row in store.sessions.list_sessions()}

    with RunningProxy(settings, strategy="window") as running:
        openai = client(running)
        for n in range(3):
            openai.chat.completions.create(
                model="test-small", messages=[{"role": "user", "content": f"hi {n}"}],
                extra_headers={"X-Chatmem-Conversation": "now"})
            # Once marked before it ran, the failed retention was never tried again.
            assert ("old" in sessions()) == (n == 0)
    assert len(calls) == 2  # once per server after it succeeded, not once per request


def test_model_at_strategy_picks_the_strategy(proxy: RunningProxy, db_path: Path) -> None:
    openai = client(proxy)
    listed = {m.id for m in openai.models.list().data}
    assert {"test-small", "test-small@summary-buffer", "test-large@retrieval"} <= listed
    openai.chat.completions.create(model="test-small@window:k=1",
                                   extra_headers={"X-Chatmem-Conversation": "w"},
                                   messages=[{"role": "user", "content": "hi"}])
    with Store(db_path) as store:
        session = store.sessions.session("w")
    assert (session.strategy, session.params["k"]) == ("window", 1)


def test_an_input_over_the_budget_is_refused_with_advice_a_client_can_take(
        chat_server: ChatServer, upstream_settings: Settings) -> None:
    """The refusal told an HTTP client to type /budget N or pass --allow-over-budget."""
    import dataclasses

    import openai as sdk

    settings = dataclasses.replace(upstream_settings, context_budget=60)
    with RunningProxy(settings, strategy="window") as small, \
            pytest.raises(sdk.BadRequestError) as refused:
        client(small).chat.completions.create(
            model="test-small", extra_headers={"X-Chatmem-Conversation": "budget"},
            messages=[{"role": "user", "content": "请把这段话记下来。" * 40}])
    message = refused.value.body["message"]  # type: ignore[index]
    assert "over the context budget of 60" in message and "context_budget" in message
    assert "/budget" not in message and "--allow-over-budget" not in message
    assert chat_server.requests == []


def test_serve_s_is_the_strategy_of_conversations_it_starts_not_of_existing_ones(
        proxy: RunningProxy, db_path: Path) -> None:
    """`--help` says "Strategy for new conversations", but `serve -s window` switched every
    conversation a request reached to window, its own strategy and parameters gone."""
    with Store(db_path) as store:
        store.sessions.create_session("旅行", "tokens", {"max_tokens": 900})
    openai = client(proxy)
    for conversation, model in (("旅行", "test-small"), ("新的", "test-small"),
                                ("旅行", "test-small@window:k=3")):
        openai.chat.completions.create(
            model=model, extra_headers={"X-Chatmem-Conversation": quote(conversation)},
            messages=[{"role": "user", "content": f"{conversation} 你好"}])
        with Store(db_path) as store:
            session = store.sessions.session(conversation)
            kept = (session.strategy, session.params)
        expected = {"test-small": ("tokens", {"max_tokens": 900}) if conversation == "旅行"
                    else ("window", {"k": 5})}.get(model, ("window", {"k": 3}))
        assert kept == expected, (conversation, model)


def test_errors_come_back_openai_shaped(proxy: RunningProxy, chat_server: ChatServer,
                                        db_path: Path) -> None:
    import openai as sdk

    openai = client(proxy)
    with pytest.raises(sdk.BadRequestError) as wrong:
        openai.chat.completions.create(model="test-small", n=2,
                                       messages=[{"role": "user", "content": "hi"}])
    assert wrong.value.body["param"] == "n"  # type: ignore[index]
    chat_server.plan = ["401"]
    with pytest.raises(sdk.InternalServerError) as refused:  # 502: the server's key
        openai.chat.completions.create(model="test-small",
                                       extra_headers={"X-Chatmem-Conversation": "e"},
                                       messages=[{"role": "user", "content": "hi"}])
    assert "sk-test" not in str(refused.value.body)
    with Store(db_path) as store:  # a failed turn: its row only, nothing in memory
        session = store.sessions.session("e")
        assert [t.status for t in store.turns.turns(session.id)] == ["failed"]
        assert store.history.messages(session.id) == []


def test_a_strategy_the_model_names_wrongly_is_refused_naming_model(
        proxy: RunningProxy, chat_server: ChatServer) -> None:
    """`x@nostrat` and `m@window:k=abc` were 400s with `param: null`: OpenAI's errors name
    the field at fault, and a client shows it (or picks the field to fix) from there."""
    import openai as sdk

    openai = client(proxy)
    for model in ("test-small@nostrat", "test-small@window:k=abc", "test-small@window+记忆"):
        for stream in (False, True):
            with pytest.raises(sdk.BadRequestError) as wrong:
                answer = openai.chat.completions.create(
                    model=model, stream=stream,
                    extra_headers={"X-Chatmem-Conversation": quote("坏策略")},
                    messages=[{"role": "user", "content": "hi"}])
                if stream:
                    list(answer)  # type: ignore[call-overload]
            body = wrong.value.body
            assert body["param"] == "model", (model, body)  # type: ignore[index]
            assert body["type"] == "invalid_request_error"  # type: ignore[index]
    assert chat_server.requests == []


def test_a_streamed_request_refused_before_its_reply_gets_the_status_of_why(
        proxy: RunningProxy, chat_server: ChatServer) -> None:
    """Refused by the model (401: a 502) or by the budget before a piece of the reply was
    sent: the status an unstreamed request gets, so a client can tell and retry, not a 200."""
    import openai as sdk

    openai = client(proxy)
    chat_server.plan = ["401"]
    with pytest.raises(sdk.InternalServerError):
        list(openai.chat.completions.create(
            model="test-small", stream=True, extra_headers={"X-Chatmem-Conversation": "s1"},
            messages=[{"role": "user", "content": "hi"}]))
    with pytest.raises(sdk.BadRequestError):
        list(openai.chat.completions.create(
            model="test-small", stream=True, extra_headers={"X-Chatmem-Conversation": "s3"},
            messages=[{"role": "user", "content": "长 " * 20_000}]))
    pieces = list(openai.chat.completions.create(
        model="test-small", stream=True, extra_headers={"X-Chatmem-Conversation": "s4"},
        messages=[{"role": "user", "content": "hi"}]))
    assert "".join(p.choices[0].delta.content or "" for p in pieces if p.choices) == \
        "Hello from the test server."


def test_a_conversations_requests_take_turns_even_with_other_models(
        proxy: RunningProxy, chat_server: ChatServer) -> None:
    """Two models on one conversation have engines of their own; their turns still run one
    at a time, and the turn each response names is its own."""
    chat_server.plan = ["slow", "ok"]  # the first reply holds after its first piece
    seen: dict[str, tuple[str, str]] = {}

    def ask(model: str) -> None:
        with httpx.stream("POST", f"{proxy.base_url}/chat/completions", timeout=HANG,
                          headers={"X-Chatmem-Conversation": "两个模型".encode()},
                          json={"model": model, "stream": True,
                                "messages": [{"role": "user", "content": f"from {model}"}]}
                          ) as response:
            header = response.headers["X-Chatmem-Turn"]
            last = [json.loads(line[6:]) for line in response.iter_lines()
                    if line.startswith("data: {")][-1]
        seen[model] = (header, quote(last["chatmem"]["turn"], safe="@"))

    first = threading.Thread(target=ask, args=("test-small",))
    first.start()
    wait_until(lambda: chat_server.first_delta_sent.is_set() or not first.is_alive(),
               "the first reply has begun")
    assert first.is_alive(), seen  # (a request that failed has ended)
    second = threading.Thread(target=ask, args=("other-model",))
    second.start()
    chat_server.release.set()
    first.join(HANG)
    second.join(HANG)
    assert all(header == final for header, final in seen.values()), seen
    assert {final for _, final in seen.values()} == {
        f"{quote('两个模型')}@1", f"{quote('两个模型')}@2"}


def test_a_conversations_lock_is_not_kept_once_no_request_holds_it(
        upstream_settings: Settings) -> None:
    """A server that runs for months serves many conversations: it keeps the lock of those
    a request holds or waits on, not one for every conversation it ever served."""
    keeper = Proxy(upstream_settings, ModelPool(), strategy=None)
    held = keeper.one_turn_at_a_time("h.db", "旅行")
    assert keeper.one_turn_at_a_time("h.db", "旅行") is held
    assert keeper.one_turn_at_a_time("h.db", "日记") is not held
    for n in range(1000):
        with keeper.one_turn_at_a_time("h.db", f"conversation {n}"):
            pass
    gc.collect()
    assert list(keeper._turns) == [("h.db", "旅行")]
    del held
    gc.collect()
    assert not keeper._turns


def test_a_client_that_leaves_mid_stream_leaves_a_cancelled_turn(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    chat_server.plan = ["drip"]  # a reply that goes on for as long as anyone reads it
    with httpx.stream("POST", f"{proxy.base_url}/chat/completions", timeout=HANG,
                      headers={"X-Chatmem-Conversation": "gone"},
                      json={"model": "test-small", "stream": True,
                            "messages": [{"role": "user", "content": "tell me a story"}]}
                      ) as response:
        for line in response.iter_lines():
            if '"abc"' in line:
                break  # the client hangs up with the reply half sent

    wait_until(lambda: statuses(db_path, "gone") == ["cancelled"],
               "the turn is stored as cancelled")
    with Store(db_path) as store:
        assert store.history.messages(store.sessions.session("gone").id) == []  # out of memory
    # Said in the server's log (clients70: nothing said why the turn was missing).
    wait_until(lambda: proxy.logged, "the server's log says it")
    assert len(proxy.logged) == 1
    assert proxy.logged[0].startswith("gone@1: ") and "cancelled" in proxy.logged[0]


def test_a_client_that_leaves_a_reply_it_did_not_stream_leaves_a_cancelled_turn(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    chat_server.plan = ["drip"]  # a reply that goes on for as long as anyone reads it
    with pytest.raises(httpx.ReadTimeout):  # the client gives up waiting, and hangs up
        httpx.post(f"{proxy.base_url}/chat/completions", timeout=1.0,
                   headers={"X-Chatmem-Conversation": "gave-up"},
                   json={"model": "test-small",
                         "messages": [{"role": "user", "content": "讲个长故事"}]})

    wait_until(lambda: statuses(db_path, "gave-up") == ["cancelled"],
               "the turn is stored as cancelled")


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
def test_a_client_that_leaves_while_the_model_is_stalled_leaves_a_cancelled_turn_at_once(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    """Its hang-up was noticed only at the reply's next piece, and a stalled model sent
    none: the conversation was held until the read timeout (60 s), and the turn stored as
    failed ("did not answer in time"), not cancelled."""
    chat_server.plan = ["hang"]  # takes the request, and answers nothing until released
    url, header = f"{proxy.base_url}/chat/completions", {"X-Chatmem-Conversation": "stalled"}
    address = urlsplit(url)
    leaving = http.client.HTTPConnection(address.hostname or "", address.port, timeout=HANG)
    try:
        leaving.request("POST", address.path, json.dumps({
            "model": "test-small", "stream": stream,
            "messages": [{"role": "user", "content": "模型卡住了吗？"}]}).encode(),
            {"Content-Type": "application/json", **header})
        # The client gives up waiting, and hangs up, once the model holds its request (a
        # read timeout of 1 s ran out before a loaded machine's server had sent it: 0
        # requests at the model, the test failed).
        wait_until(lambda: len(chat_server.requests) == 1, "the model holds the request")
        leaving.close()
        wait_until(lambda: statuses(db_path, "stalled") == ["cancelled"],
                   "the turn is stored as cancelled")
        # While the model still holds the request: not after the client's read timeout
        # (60 s), when its retry was asked.
        assert len(chat_server.requests) == 1
        # The conversation is free: the next request is answered while the stalled request
        # is still open at the model.
        answer = httpx.post(url, timeout=HANG, headers=header, json={
            "model": "test-small", "messages": [{"role": "user", "content": "还在吗？"}]})
        assert not chat_server.release.is_set()
    finally:
        chat_server.release.set()
        leaving.close()
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == "Hello from the test server."
    assert statuses(db_path, "stalled") == ["cancelled", "ok"]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
def test_a_client_that_leaves_while_its_request_waits_for_the_conversation_costs_no_call(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    """Review: a request waiting for its conversation's turn (another request's reply under
    way) whose client gave up meanwhile (a timeout, a retry) was still sent to the model
    once the conversation was free, its whole context paid for, then cancelled at the
    reply's first piece. Nobody waits for it: it is stored as cancelled, never sent."""
    from chatmem.serve.turn import Turn

    chat_server.release.clear()
    chat_server.plan = ["slow"]  # the first reply's first piece, then held until released
    url, header = f"{proxy.base_url}/chat/completions", {"X-Chatmem-Conversation": "queued"}
    first = threading.Thread(target=lambda: client(proxy).chat.completions.create(
        model="test-small", messages=[{"role": "user", "content": "第一个问题"}],
        extra_headers=header))
    first.start()
    try:
        assert chat_server.first_delta_sent.wait(HANG)
        with pytest.raises(httpx.ReadTimeout):  # the client gives up waiting, and hangs up
            httpx.post(url, timeout=1.0, headers=header, json={
                "model": "test-small", "stream": stream,
                "messages": [{"role": "user", "content": "等不及了"}]})

        def left() -> bool:
            waiting = [o for o in gc.get_objects() if isinstance(o, Turn)
                       and o.asked.text == "等不及了"]
            return bool(waiting) and waiting[0].gone.is_set()
        wait_until(left, "the server saw the second client leave")
    finally:
        chat_server.release.set()
    first.join(HANG)
    wait_until(lambda: statuses(db_path, "queued") == ["ok", "cancelled"],
               "the second turn is stored as cancelled")
    assert [m["content"] for m in chat_server.requests[-1]["messages"]][-1] == "第一个问题"
    assert len(chat_server.requests) == 1

def test_what_a_client_gets_wrong_is_a_400_that_names_it_and_stores_nothing(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    url = f"{proxy.base_url}/chat/completions"
    header = {"X-Chatmem-Conversation": "wrong"}
    asked = len(chat_server.requests)
    for body, param, message in (
            ({"messages": [{"role": "user", "content": "  "}]}, "messages",
             "the last message is empty: nothing to send"),
            ({"messages": [{"role": "user", "content": None}]}, "messages",
             "the last message is empty: nothing to send"),
            ({"messages": [{"role": "user", "content": "hi"}], "temperature": "nan"},
             "temperature", "temperature must be a finite number"),
            ('{"messages": [{"role": "user", "content": "hi"}], "top_p": 1e400}',
             "top_p", "top_p must be a finite number"),  # JSON's 1e400 is read as inf
            ({"messages": [{"role": "user", "content": [{"type": "text", "text": None}]}]},
             "messages", "messages[0].content[0].text must be text"),
            ({"messages": [{"role": "user", "content": [
                {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}]},
             "messages", "messages[0].content[0]: only text parts are taken, not input_audio"),
            ({"messages": [{"role": "user", "content": "hi"}], "model": {"name": "gpt"}},
             "model", 'model must be a string, e.g. "gpt-4o-mini@window"'),
            ({"messages": [{"role": "user", "content": "你好"}], "model": "test-small@"},
             "model", "model 'test-small@' names no strategy after @: name one (e.g. "
                      "test-small@window) or leave the @ out"),
            ({"messages": [{"role": "user", "content": "你好"}], "model": "@"},
             "model", "model '@' names no strategy after @: name one (e.g. MODEL@window) or "
                      "leave the @ out"),
            ({"messages": [{"role": "user", "content": "hi"}], "stream": "yes"},
             "stream", "stream must be true or false"),
            ({"messages": [{"role": "user", "content": "hi"}], "seed": 1.5},
             "seed", "seed must be a whole number"),
            ('{"messages": [{"role": "user", "content": "你好"}], "seed": 1%s}' % ("0" * 5000),
             "seed", "seed must be a finite number"),  # more digits than Python reads
            ('{"messages": [{"role": "user", "content": "你好"}], "max_tokens": -%s}'
             % ("9" * 5000), "max_tokens", "max_tokens must be a whole number of 1 or more"),
            ({"messages": [{"role": "user", "content": "hi"}], "stop": ["a", 1]},
             "stop", "stop must be a string or a list of strings"),
            ({"messages": [{"role": "user", "content": "hi"}], "response_format": "json"},
             "response_format",
             'response_format must be an object with a "type", e.g. {"type": "json_object"}'),
            ({"messages": [{"role": "user", "content": "hi"}], "logprobs": True},
             "logprobs", "logprobs is not returned through chatmem; ask the model directly")):
        text = body if isinstance(body, str) else json.dumps({"model": "test-small", **body})
        answer = httpx.post(url, headers={**header, "Content-Type": "application/json"},
                            timeout=HANG, content=text)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["param"] == param
        assert answer.json()["error"]["message"] == message
    nested = "[" * 100_000 + "]" * 100_000
    answer = httpx.post(url, headers={**header, "Content-Type": "application/json"},
                        timeout=HANG, content=f'{{"messages": {nested}}}')
    assert answer.status_code == 400 and answer.json()["error"]["message"] == \
        "the body is not JSON"
    far = httpx.get(f"{proxy.base_url}/chatmem/turns/wrong@99999999999999999999", timeout=HANG)
    assert far.status_code == 404 and "error" in far.json()
    assert len(chat_server.requests) == asked
    with Store(db_path) as store:
        assert store.sessions.find_session("wrong") is None


def test_what_a_request_asks_of_the_model_reaches_it_and_a_refusal_is_read_as_text(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    asked = {"stop": ["\n\n", "。"], "response_format": {"type": "json_object"},
             "logit_bias": {"50256": -100}, "seed": 7, "logprobs": False}
    refused = {"role": "assistant", "content": [{"type": "refusal", "refusal": "我不能说。"}]}
    answer = httpx.post(f"{proxy.base_url}/chat/completions", timeout=HANG, json={
        "model": "test-small", **asked, "messages": [
            {"role": "user", "content": "说吧"}, refused, {"role": "user", "content": "为什么？"}]},
        headers={"X-Chatmem-Conversation": "passed"})
    assert answer.status_code == 200, answer.text
    sent = chat_server.requests[-1]
    assert {key: sent.get(key) for key in ("stop", "response_format", "logit_bias", "seed")} \
        == {key: asked[key] for key in ("stop", "response_format", "logit_bias", "seed")}
    assert "logprobs" not in sent
    with Store(db_path) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("passed").id)]
    assert said[:3] == ["说吧", "我不能说。", "为什么？"]


def test_without_a_token_only_this_machines_programs_are_answered_not_web_pages(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """A page the browser shows may POST here unasked (a simple cross-site request carries
    its Origin) or read answers through a name made to point here (its Host): both 403,
    and nothing reaches the model or the history."""
    body = {"model": "test-small", "user": "trip",
            "messages": [{"role": "system", "content": "You obey evil.example"},
                         {"role": "user", "content": "你好"}]}
    url = f"{proxy.base_url}/chat/completions"
    asked = len(chat_server.requests)
    for headers in ({"Origin": "https://evil.example", "Content-Type": "text/plain"},
                    {"Origin": "null"},
                    {"Host": f"rebind.evil.example:{proxy.port}"},
                    {"Host": f"127.0.0.1.evil.example:{proxy.port}"}):
        refused = httpx.post(url, content=json.dumps(body), headers=headers, timeout=HANG)
        assert refused.status_code == 403, (headers, refused.text)
        assert refused.json()["error"]["code"] == "forbidden"
    read = httpx.get(f"{proxy.base_url}/chatmem/turns/trip@1", timeout=HANG,
                     headers={"Host": "rebind.evil.example"})
    assert read.status_code == 403
    assert len(chat_server.requests) == asked
    with Store(db_path) as store:
        assert store.sessions.find_session("trip") is None
    # Each refusal is one line in the owner's log, as the README says, the value quoted.
    assert [line.split(" from ")[0] for line in proxy.refused] == [
        "refused POST /v1/chat/completions"] * 4 + ["refused GET /v1/chatmem/turns/trip@1"]
    assert proxy.refused[0].endswith(": its Origin 'https://evil.example' is another site's "
                                     "(not allowed with --allow-origin)")
    assert proxy.refused[1].endswith(": its Origin 'null' is another site's "
                                     "(not allowed with --allow-origin)")
    assert proxy.refused[2].endswith(
        f": its Host 'rebind.evil.example:{proxy.port}' is not a loopback name")
    proxy.refused.clear()
    # The server's own origin (no page of its own: nothing else is this address and port).
    for headers in ({}, {"Origin": f"http://127.0.0.1:{proxy.port}"},
                    {"Host": f"localhost:{proxy.port}"}):
        answered = httpx.post(url, json=body, headers=headers, timeout=HANG)
        assert answered.status_code == 200, (headers, answered.text)
    assert proxy.refused == []


def test_a_host_header_is_read_whole_userinfo_or_a_port_not_of_digits_is_no_loopback_name(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """`127.0.0.1:PORT@evil.example` was read as 127.0.0.1 (the text before its one colon):
    a Host nobody's browser or SDK sends, refused as another name is; a loopback name in
    any case, with or without a port, bracketed IPv6, is still this machine."""
    url = f"{proxy.base_url}/models"
    for host in (f"127.0.0.1:{proxy.port}@evil.example", f"localhost:{proxy.port}@evil.example",
                 "127.0.0.1:x", f"[::1]evil.example:{proxy.port}", f"[::1]:{proxy.port}@evil",
                 f"127.0.0.1:{proxy.port}/evil.example", f"ann@127.0.0.1:{proxy.port}"):
        refused = httpx.get(url, headers={"Host": host}, timeout=HANG)
        assert refused.status_code == 403, (host, refused.text)
        assert refused.json()["error"]["code"] == "forbidden"
    assert len(proxy.refused) == 7
    for host in (f"LOCALHOST:{proxy.port}", "127.0.0.1", f"[::1]:{proxy.port}", "127.9.9.9:80"):
        answered = httpx.get(url, headers={"Host": host}, timeout=HANG)
        assert answered.status_code == 200, (host, answered.text)
    assert len(proxy.refused) == 7


def test_what_is_not_served_is_an_openai_shaped_error_and_a_listed_model_is_found(
        proxy: RunningProxy) -> None:
    openai = client(proxy)
    for call in (lambda: openai.completions.create(model="test-small", prompt="你好"),
                 lambda: openai.embeddings.create(model="test-small", input="你好")):
        with pytest.raises(Exception) as refused:
            call()
        assert getattr(refused.value, "status_code", None) == 404
        assert "is not served here: chatmem serves POST /v1/chat/completions" in str(
            refused.value)
    wrong_method = httpx.get(f"{proxy.base_url}/chat/completions", timeout=HANG)
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"]["message"].startswith("GET /v1/chat/completions is not")
    assert openai.models.retrieve("test-small@window").id == "test-small@window"
    missing = httpx.get(f"{proxy.base_url}/models/nope", timeout=HANG)
    assert missing.status_code == 404 and missing.json()["error"]["param"] == "model"
    assert missing.json()["error"]["code"] == "model_not_found"  # as OpenAI's
    for turn in ("trip@²", "trip@٣", "trip@x"):
        odd = httpx.get(f"{proxy.base_url}/chatmem/turns/{quote(turn)}", timeout=HANG)
        assert odd.status_code == 404, odd.text
        assert odd.json()["error"]["message"] == f"turn id {turn!r} is not CONVERSATION@N"


def test_a_token_is_required_when_given(upstream_settings: Settings) -> None:
    with RunningProxy(upstream_settings, token="s3cret") as running:
        refused = httpx.get(f"{running.base_url}/models", timeout=HANG)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == \
            "invalid_api_key"
        allowed = httpx.get(f"{running.base_url}/models", timeout=HANG,
                            headers={"Authorization": "Bearer s3cret"})
        assert allowed.status_code == 200


def test_listening_beyond_this_machine_makes_a_token() -> None:
    assert listening("8765", None).token is None
    assert listening("localhost:8765", None).host == "localhost"
    open_to_all = listening("0.0.0.0:8765", None)
    assert open_to_all.generated and open_to_all.token and len(open_to_all.token) >= 32
    assert listening("0.0.0.0:1", "mine").token == "mine"
    assert open_to_all.token not in repr(open_to_all)  # a log or a traceback's locals
    from chatmem.errors import UsageError

    for bad in ("eighty", "1:70000", "[::1"):
        with pytest.raises(UsageError):
            listening(bad, None)


def test_without_the_accounts_table_a_loopback_server_makes_a_token(
        upstream_settings: Settings, tmp_path: Path) -> None:
    """macOS has no /proc/net: which account connects cannot be told, so a token is made as
    for a server open to the network, and a request without it never reaches the app."""
    missing = tmp_path / "no-proc-net"
    where = listening("127.0.0.1:0", None, accounts=missing)
    assert where.made is TokenMade.ACCOUNTS_UNKNOWN and where.token and len(where.token) >= 32
    assert listening("[::1]:0", None, accounts=missing).made is TokenMade.ACCOUNTS_UNKNOWN
    assert listening("0.0.0.0:1", None, accounts=missing).made is TokenMade.BEYOND_THIS_MACHINE
    for given in (listening("127.0.0.1:0", "mine", accounts=missing),
                  listening("127.0.0.1:0", None, tokens_given=True, accounts=missing)):
        assert given.made is None and given.token in ("mine", None)
    with RunningProxy(upstream_settings, token=where.token, accounts=missing) as running:
        assert httpx.get(f"{running.base_url}/models", timeout=HANG).status_code == 401
        allowed = httpx.get(f"{running.base_url}/models", timeout=HANG,
                            headers={"Authorization": f"Bearer {where.token}"})
        assert allowed.status_code == 200


def test_a_connection_whose_account_is_not_found_is_refused_not_let_in(
        upstream_settings: Settings, chat_server: ChatServer, db_path: Path,
        tmp_path: Path) -> None:
    """The tables exist but do not list this connection's socket: 403, one line in the log,
    nothing reaches the model or the history."""
    (tmp_path / "tcp").write_text("  sl  local_address rem_address   st\n")
    (tmp_path / "tcp6").write_text("  sl  local_address rem_address   st\n")
    with RunningProxy(upstream_settings, accounts=tmp_path) as running:
        refused = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG, json={
            "model": "test-small", "user": "无名",
            "messages": [{"role": "user", "content": "你好"}]})
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "forbidden"
        assert "which account" in refused.json()["error"]["message"]
        assert len(running.refused) == 1
        assert running.refused[0].startswith("refused POST /v1/chat/completions from 127.0.0.1:")
    assert chat_server.requests == []
    with Store(db_path) as store:
        assert store.sessions.find_session("无名") is None


@needs_root
def test_another_account_of_this_machine_is_refused_and_the_owner_answered(
        proxy: RunningProxy, chat_server: ChatServer, db_path: Path) -> None:
    """Without a token, `nobody` read root's turns and posted completions answered with
    root's model and key; now each is a 403 and one line in root's log."""
    openai = client(proxy)
    openai.chat.completions.create(model="test-small", user="private",
                                   messages=[{"role": "user", "content": "我的银行密码提示"}])
    asked = len(chat_server.requests)
    read, said = status_as_nobody("127.0.0.1", proxy.port, "GET",
                                  "/v1/chatmem/turns/private@1")
    assert read == 403 and b"forbidden" in said and "银行".encode() not in said
    body = json.dumps({"model": "test-small", "user": "private",
                       "messages": [{"role": "user", "content": "再说一遍"}]}).encode()
    posted, _ = status_as_nobody("127.0.0.1", proxy.port, "POST", "/v1/chat/completions",
                                 body, {"Content-Type": "application/json"})
    assert posted == 403
    assert len(chat_server.requests) == asked
    assert statuses(db_path, "private") == ["ok"]
    assert [line.split(":")[0] for line in proxy.refused] == [
        f"refused GET /v1/chatmem/turns/private@1 from uid {NOBODY} at 127.0.0.1",
        f"refused POST /v1/chat/completions from uid {NOBODY} at 127.0.0.1"]
    mine = httpx.get(f"{proxy.base_url}/chatmem/turns/private@1", timeout=HANG)
    assert mine.status_code == 200


@needs_root
def test_a_forwarded_for_header_does_not_name_the_owners_connection(
        proxy: RunningProxy, chat_server: ChatServer) -> None:
    """uvicorn took the client's address from X-Forwarded-For (trusted from loopback): by
    naming a connection the owner holds open, `nobody` was answered as the owner."""
    openai = client(proxy)
    openai.chat.completions.create(model="test-small", user="private",
                                   messages=[{"role": "user", "content": "my secret is 4711"}])
    with socket.create_connection(("127.0.0.1", proxy.port)) as owners:
        forged = {"X-Forwarded-For": f"127.0.0.1:{owners.getsockname()[1]}"}
        read, said = status_as_nobody("127.0.0.1", proxy.port, "GET",
                                      "/v1/chatmem/turns/private@1", headers=forged)
    assert read == 403 and b"4711" not in said
    assert proxy.refused[-1].startswith(
        f"refused GET /v1/chatmem/turns/private@1 from uid {NOBODY}")


def test_the_command_serves_the_openai_client(chat_server: ChatServer, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    server = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "serve", "--port", "0", "--provider", "openai",
         "--model", "test-small", "--db", str(db), "-s", "window"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "OPENAI_BASE_URL": chat_server.base_url})
    try:
        said = Watched(server.stderr)  # type: ignore[arg-type]
        text = said.wait_for(lambda t: "listening on" in t, "the server listens")
        base = text.split("listening on ", 1)[1].split()[0]
        reply = OpenAI(base_url=base, api_key="unused").chat.completions.create(
            model="test-small", messages=[{"role": "user", "content": "hi"}],
            extra_headers={"X-Chatmem-Conversation": "cli"})
        assert reply.choices[0].message.content == "Hello from the test server."
        assert inspect_json(db, "cli")["turn"]["number"] == 1
    finally:
        server.terminate()
        server.wait(HANG)


def test_each_token_is_its_own_role_on_postgresql(chat_server: ChatServer, pg_url: str,
                                                  tmp_path: Path) -> None:
    # A tokens file maps each person's token to the history under their own role, so row
    # security holds per person through the proxy: the same conversation name is two
    # sessions, and neither person reads the other's.
    ann, bob = (pg_url.replace("postgresql://postgres@", f"postgresql://{role}@")
                for role in ("ann", "bob"))
    from chatmem.serve.tokens_file import load_tokens

    tokens_file = tmp_path / "tokens.toml"
    tokens_file.write_text(f'[tokens]\n"{"a" * 20}" = "{ann}"\n"{"b" * 20}" = "{bob}"\n')
    tokens_file.chmod(0o600)
    tokens = load_tokens(tokens_file)
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small")
    with RunningProxy(settings, tokens=tokens) as running:
        for token, said in (("a" * 20, "ann's secret plan"), ("b" * 20, "bob's lunch")):
            OpenAI(base_url=running.base_url, api_key=token, max_retries=0
                   ).chat.completions.create(model="test-small",
                                             extra_headers={"X-Chatmem-Conversation": "trip"},
                                             messages=[{"role": "user", "content": said}])
        assert httpx.get(f"{running.base_url}/models", timeout=HANG,
                         headers={"Authorization": "Bearer nobody-at-all-here"}
                         ).status_code == 401
    for url, own, other in ((ann, "ann's secret plan", "bob's lunch"),
                            (bob, "bob's lunch", "ann's secret plan")):
        with Store(url) as store:
            trip = store.sessions.session("trip")
            contents = [m.content for m in store.history.messages(trip.id)]
        assert own in contents and other not in contents


def test_a_token_taken_out_of_the_tokens_file_is_refused_without_a_restart(
        chat_server: ChatServer, tmp_path: Path) -> None:
    # The file is read again when it changes: bob's line deleted, his next request is a 401
    # and stores nothing; a file that cannot be used refuses everyone (503), said once in
    # the log, until it is fixed.
    ann, bob = "a" * 20, "b" * 20
    tokens_file = tmp_path / "tokens.toml"

    def write(text: str) -> None:
        tokens_file.write_text(text)
        tokens_file.chmod(0o600)

    write(f'[tokens]\n"{ann}" = "{tmp_path / "ann.db"}"\n"{bob}" = "{tmp_path / "bob.db"}"\n')
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small")
    logged: list[str] = []
    with RunningProxy(settings, tokens=TokensFile(tokens_file, log=logged.append)) as running:
        def status(token: str, said: str = "你好") -> int:
            return httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                              headers={"Authorization": f"Bearer {token}",
                                       "X-Chatmem-Conversation": "trip"},
                              json={"model": "test-small",
                                    "messages": [{"role": "user", "content": said}]}
                              ).status_code

        assert status(bob) == 200
        write(f'[tokens]\n"{ann}" = "{tmp_path / "ann.db"}"\n')
        assert status(bob, "after") == 401
        assert status(ann) == 200
        assert logged == [f"{tokens_file}: read again (1 token)"]
        write("[tokens\n")
        assert (status(ann), status(bob)) == (503, 503)
        assert len(logged) == 2 and "every request is refused" in logged[1]
        tokens_file.chmod(0o644)  # everyone's tokens readable by others: refused as well
        assert status(ann) == 503
        write(f'[tokens]\n"{ann}" = "{tmp_path / "ann.db"}"\n')
        assert status(ann) == 200
    assert statuses(tmp_path / "bob.db", "trip") == ["ok"]


def _replaced_as_nobody(path: Path, text: str) -> None:
    """`nobody` writes TEXT beside PATH and renames it over PATH, as an editor saves. The
    child only makes system calls (a fork of a process with threads must not take locks)."""
    new, data = path.with_name("t.new"), text.encode()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child ends with _exit)
        code = 1
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, data)
            os.close(fd)
            os.rename(new, path)
            code = 0
        finally:
            os._exit(code)
    assert os.waitpid(child, 0)[1] == 0


@needs_root
def test_a_tokens_file_another_account_put_in_place_refuses_everyone(
        chat_server: ChatServer, tmp_path: Path) -> None:
    # Read again after a change, a file that is not this account's, or that sits where
    # others may replace it, is refused (503, one log line) as at start: the attacker's
    # token would otherwise connect as whatever role their line names.
    ann, attacker = "a" * 20, "attacker-token-0123456789"
    # Under /tmp itself: nobody cannot pass through pytest's own folders (0700).
    reachable = Path(tempfile.mkdtemp(prefix="chatmem-tokens-"))
    reachable.chmod(0o711)
    shared = reachable / "共享"
    shared.mkdir()
    try:
        _refused_once_replaced(chat_server, tmp_path, shared, ann, attacker)
    finally:
        shutil.rmtree(reachable)


def _refused_once_replaced(chat_server: ChatServer, tmp_path: Path, shared: Path, ann: str,
                           attacker: str) -> None:
    tokens_file = shared / "tokens.toml"
    tokens_file.write_text(f'[tokens]\n"{ann}" = "{tmp_path / "ann.db"}"\n')
    tokens_file.chmod(0o600)
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small")
    logged: list[str] = []
    with RunningProxy(settings, tokens=TokensFile(tokens_file, log=logged.append)) as running:
        def status(token: str) -> int:
            return httpx.get(f"{running.base_url}/models", timeout=HANG,
                             headers={"Authorization": f"Bearer {token}"}).status_code

        assert status(ann) == 200
        shared.chmod(0o777)  # a mistake, no sticky bit: nobody renames their own file in
        _replaced_as_nobody(tokens_file, f'[tokens]\n"{attacker}" = "{tmp_path / "x.db"}"\n')
        assert (status(attacker), status(ann)) == (503, 503)
        assert len(logged) == 1 and "belongs to another account" in logged[0], logged
        os.chown(tokens_file, 0, 0)  # now ours, but still where others could replace it
        assert (status(attacker), status(ann)) == (503, 503)
        assert len(logged) == 2
        assert f"other users can write its directory {shared} (mode" in logged[1]
        shared.chmod(0o700)
        tokens_file.write_text(f'[tokens]\n"{ann}" = "{tmp_path / "ann.db"}"\n')
        assert (status(attacker), status(ann)) == (401, 200)
    assert not (tmp_path / "x.db").exists()
