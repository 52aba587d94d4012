"""Chats no id names, which `chatmem serve` knows by how they began and by the whole history
each request sends: two alike stay two, and neither's turn is replaced by the other's."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from chat_server import ChatServer
from cli_runner import invoke
from waiting import HANG, wait_until

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings
from chatmem.store import Store


def test_a_chat_that_goes_on_is_not_taken_for_a_regenerate_in_another_alike(
        chat_server: ChatServer, db_path: Path) -> None:
    """Two clients that sent the same whole histories, A then B: B's third request matched
    A's session as a regenerate of A's third turn (looked at first), and replaced it."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))

    def chat() -> list[str]:
        history: list[dict[str, str]] = []
        ids = []
        for said in ("你好", "第零步", "第一步"):
            history.append({"role": "user", "content": said})
            answer = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                                json={"model": "test-small", "messages": history})
            assert answer.status_code == 200, answer.text
            history.append({"role": "assistant",
                            "content": answer.json()["choices"][0]["message"]["content"]})
            ids.append(unquote(answer.headers["X-Chatmem-Turn"]))
        return ids

    with RunningProxy(settings, strategy="window") as running:
        a, b = chat(), chat()
    assert [i.rpartition("@")[2] for i in a + b] == ["1", "2", "3"] * 2
    sessions = {i.rpartition("@")[0] for i in a} | {i.rpartition("@")[0] for i in b}
    assert len(sessions) == 2  # each chat a session of its own, all along
    with Store(db_path) as store:
        for name in sessions:
            session = store.sessions.session(name)
            turns = store.turns.turns(session.id)
            assert [(str(t.status), t.superseded_by) for t in turns] == [("ok", None)] * 3
            assert store.history.turn_count(session.id) == 3


def _ask(running: RunningProxy, messages: list[dict[str, str]]) -> tuple[str, str, str]:
    """The session a request went on, how it was stored, and the reply."""
    answer = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                        json={"model": "test-small", "messages": messages})
    assert answer.status_code == 200, answer.text
    return (unquote(answer.headers["X-Chatmem-Turn"]), answer.headers["X-Chatmem-Stored-As"],
            answer.json()["choices"][0]["message"]["content"])


def test_a_client_that_trims_its_history_goes_on_in_one_session(
        chat_server: ChatServer, db_path: Path) -> None:
    """A client keeping a system prompt and the last two exchanges (LangChain's
    trim_messages, bots): once its window slid past its first message each request was
    named by another opening, and began a new session holding a copy of the window."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    full: list[dict[str, str]] = []
    seen = []
    with RunningProxy(settings, strategy="window") as running:
        for i in range(7):
            full.append({"role": "user", "content": f"第{i}个问题 q{i}"})
            turn, stored_as, reply = _ask(running, [{"role": "system", "content": "sys"},
                                                    *full[-5:]])
            seen.append((turn, stored_as))
            full.append({"role": "assistant", "content": reply})
    name = seen[0][0].rpartition("@")[0]
    assert seen == [(f"{name}@{i + 1}", "new-session" if i == 0 else "next-turn")
                    for i in range(7)]
    with Store(db_path) as store:
        assert [s.name for s in store.sessions.list_sessions()] == [name]
        stored = store.history.messages(store.sessions.session(name).id)
        assert [(m.role, m.content) for m in stored] == [(m["role"], m["content"]) for m in full]


def test_a_client_that_trims_its_history_regenerates_its_last_reply_in_its_session(
        chat_server: ChatServer, db_path: Path) -> None:
    """A regenerate sends the window without the last reply, which ends with the exchange
    before it: only the last answered one was filed, so it began a new session holding a
    copy of the window instead of replacing the turn."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    system = [{"role": "system", "content": "sys"}]
    full: list[dict[str, str]] = []
    with RunningProxy(settings, strategy="window") as running:
        for i in range(5):
            full.append({"role": "user", "content": f"第{i}个问题 q{i}"})
            turn, _, reply = _ask(running, [*system, *full[-5:]])
            full.append({"role": "assistant", "content": reply})
        name = turn.rpartition("@")[0]
        for _ in range(2):  # a regenerate of a regenerate too
            turn, stored_as, reply = _ask(running, [*system, *full[-6:-1]])
            assert (turn, stored_as) == (f"{name}@5", "replaced-last-turn")
            full[-1] = {"role": "assistant", "content": reply}
        full.append({"role": "user", "content": "然后呢 next"})
        assert _ask(running, [*system, *full[-5:]])[:2] == (f"{name}@6", "next-turn")
    with Store(db_path) as store:
        assert [s.name for s in store.sessions.list_sessions()] == [name]
        session = store.sessions.session(name)
        stored = store.history.messages(session.id)
        assert [(m.role, m.content) for m in stored[:-1]] == [
            (m["role"], m["content"]) for m in full]
        assert [t.superseded_by is not None for t in store.turns.turns(session.id)] == [
            False] * 4 + [True, True, False, False]


def test_a_window_goes_on_only_a_session_it_is_the_whole_end_of(
        chat_server: ChatServer, db_path: Path) -> None:
    """Every reply here is the same: chats that share their last exchange ("hi") are told
    apart by the rest of the window, by the system prompt, and one exchange is too little."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))

    def whole(*said: str, system: str | None = None) -> str:
        history: list[dict[str, str]] = []
        head = [] if system is None else [{"role": "system", "content": system}]
        for text in said:
            history.append({"role": "user", "content": text})
            turn, _, reply = _ask(running, head + history)
            history.append({"role": "assistant", "content": reply})
        return turn.rpartition("@")[0]

    def window(*said: str, new: str, system: str | None = None) -> tuple[str, str]:
        reply = "".join(chat_server.reply_words)
        messages = [] if system is None else [{"role": "system", "content": system}]
        for text in said:
            messages += [{"role": "user", "content": text},
                         {"role": "assistant", "content": reply}]
        turn, stored_as, _ = _ask(running, [*messages, {"role": "user", "content": new}])
        return turn.rpartition("@")[0], stored_as

    with RunningProxy(settings, strategy="window") as running:
        a = whole("alpha", "hi", "hey")
        assert window("hi", "hey", new="1") == (a, "next-turn")
        b = whole("beta", "hi", "hey", system="你是助手")
        c = whole("delta", "hi", "hey", system="你是助手")
        # b and c both end so: which one a window is cannot be told, so it is neither's.
        assert window("hi", "hey", new="2", system="你是助手")[1] == "new-session"
        d = whole("epsilon", "hi", "hoy", system="你是助手")
        assert window("hi", "hoy", new="3", system="另一个")[1] == "new-session"
        assert window("hoy", new="4", system="你是助手")[1] == "new-session"  # one exchange
        assert window("gamma", "hoy", new="5", system="你是助手")[1] == "new-session"
        assert window("hi", "hoy", new="6", system="你是助手") == (d, "next-turn")
    with Store(db_path) as store:
        held = {s.name: store.history.message_count(s.id, at_most=100)
                for s in store.sessions.list_sessions()}
    assert (held[a], held[b], held[c], held[d]) == (8, 6, 6, 8)
    assert len(held) == 8  # four more, each the window that began it


@pytest.mark.parametrize(("where", "value"), [
    ("header", "{{LIBRECHAT_BODY_CONVERSATIONID}}"), ("header", "undefined"),
    ("metadata", "${CHAT_ID}"), ("metadata", "  "), ("user", "null")])
def test_an_id_left_unfilled_names_no_conversation(
        chat_server: ChatServer, db_path: Path, where: str, value: str) -> None:
    """A front end's template left unfilled (LibreChat's `{{LIBRECHAT_BODY_CONVERSATIONID}}`
    for a request without the field, a JavaScript `undefined`) is the same text for every
    chat: it named one session for all of them, and a new chat's model got another chat's
    messages as its memory. It is no id: each chat is known by its history."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))

    def ask(said: str) -> str:
        body: dict[str, object] = {"model": "test-small",
                                   "messages": [{"role": "user", "content": said}]}
        headers = {"X-Chatmem-Conversation": value} if where == "header" else {}
        if where != "header":
            body[where] = {"conversation_id": value} if where == "metadata" else value
        answer = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG, json=body,
                            headers=headers)
        assert answer.status_code == 200, answer.text
        return unquote(answer.headers["X-Chatmem-Conversation"])

    with RunningProxy(settings, strategy="buffer") as running:
        first, second = ask("我的病历号是 A-778"), ask("帮我写一封辞职信")
    assert first != second
    sent = [m["content"] for m in chat_server.requests[-1]["messages"]]
    assert not any("A-778" in said for said in sent), sent


def test_a_chat_whose_first_reply_was_cut_off_goes_on_in_its_session_when_sent_again(
        chat_server: ChatServer, db_path: Path) -> None:
    """Review: a chat no id names whose first reply the client stopped (a stop button, a
    closed tab) left its session with no message, only the cancelled turn's record; the
    same first message sent again was taken for another chat that began alike and went on
    in `-2`, and the empty session stayed in the list for good."""
    from test_proxy import statuses

    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    asked = [{"role": "user", "content": "杭州有什么好玩的？"}]
    with RunningProxy(settings, strategy="window") as running:
        chat_server.plan = ["drip"]
        with httpx.stream("POST", f"{running.base_url}/chat/completions", timeout=HANG,
                          json={"model": "test-small", "messages": asked,
                                "stream": True}) as streamed:
            cut = unquote(streamed.headers["X-Chatmem-Turn"]).rpartition("@")[0]
            lines = streamed.iter_lines()
            next(lines), next(lines)  # two pieces of the reply, then the client stops
        wait_until(lambda: statuses(db_path, cut) == ["cancelled"], "the turn is settled")
        # The cancelled turn's record is written a moment before its request lets the
        # name go: a client sending again in that moment is another chat begun alike.
        wait_until(lambda: not openings(running), "the cut-off request is over")
        again, stored_as, _ = _ask(running, asked)
    assert again == f"{cut}@1"
    assert stored_as == "new-session"  # it held nothing before: as the first time
    with Store(db_path) as store:
        assert [s.name for s in store.sessions.list_sessions()] == [cut]


def openings(running: RunningProxy) -> set[tuple[str, str]]:
    """The names the proxy keeps for the requests of chats no id names under way."""
    app: Any = running.server.config.app
    while not hasattr(app, "routes"):
        app = app.app
    return app.routes[0].endpoint.__self__._openings  # type: ignore[no-any-return]


@pytest.mark.parametrize(("said", "value"), [
    ("My employer is Globex Corporation.", "Globex Corporation"),
    ("我的雇主是环球公司。", "环球公司"),
])
def test_a_chat_goes_on_in_its_session_after_a_purge_and_stores_the_value_nowhere_again(
        chat_server: ChatServer, db_path: Path, said: str, value: str) -> None:
    """A client that names no chat keeps its own copy and sends it whole each time, the
    value a purge erased from the session included: that copy no longer matched the
    session's, so the chat was taken for another that began alike and its whole history
    stored again in a new session (`chat-…-2`): the purge undone by the next request."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="window") as running:
        history = [{"role": "user", "content": said}]
        for then in ("What should I buy?", "And then?"):
            turn, _, reply = _ask(running, history)
            history += [{"role": "assistant", "content": reply}, {"role": "user", "content": then}]
        name = turn.rpartition("@")[0]
        with Store(db_path) as store:
            fact = store.facts.upsert_fact("employer", value, scope="session",
                                           session_id=store.sessions.session(name).id).id
        invoke("facts", "forget", str(fact), "--purge", "--yes", "--db", str(db_path), code=0)
        assert _ask(running, history)[:2] == (f"{name}@3", "next-turn")
        # The same request again (a regenerate) is still one.
        assert _ask(running, history)[:2] == (f"{name}@3", "replaced-last-turn")
    with Store(db_path) as store:
        assert [s.name for s in store.sessions.list_sessions()] == [name]
    data = b"".join(p.read_bytes() for p in db_path.parent.glob(f"{db_path.name}*"))
    assert value.encode() not in data


@pytest.mark.parametrize("before", [0, 2])
def test_a_chat_that_keeps_a_cut_off_reply_and_goes_on_stays_in_its_session(
        chat_server: ChatServer, db_path: Path, before: int) -> None:
    """Found probing serve as Open WebUI is used without its chat-id header: a chat no id
    names whose reply the user stopped (the UI keeps the half reply, as Open WebUI's and
    LibreChat's stop buttons do) and who then wrote on was taken for another chat that
    began alike: its whole history was stored again in a new session (`chat-…-2`), its
    memory (summaries, facts) begun again from scratch there, and the session it had
    left in the list, holding the cancelled turn's record."""
    from test_proxy import statuses

    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    history: list[dict[str, str]] = []
    with RunningProxy(settings, strategy="window") as running:
        for i in range(before):
            history.append({"role": "user", "content": f"第{i}个问题"})
            _, _, reply = _ask(running, history)
            history.append({"role": "assistant", "content": reply})
        history.append({"role": "user", "content": "讲一个很长的故事"})
        chat_server.plan = ["drip"]
        kept = ""
        with httpx.stream("POST", f"{running.base_url}/chat/completions", timeout=HANG,
                          json={"model": "test-small", "messages": history,
                                "stream": True}) as streamed:
            cut = unquote(streamed.headers["X-Chatmem-Turn"]).rpartition("@")[0]
            for line in streamed.iter_lines():
                if '"abc"' in line:
                    kept += "abc"
                if len(kept) == 6:
                    break  # the user stops it; the UI keeps what came
        wait_until(lambda: (statuses(db_path, cut) or [])[-1:] == ["cancelled"],
                   "the turn is settled")
        wait_until(lambda: not openings(running), "the cut-off request is over")
        history += [{"role": "assistant", "content": kept},
                    {"role": "user", "content": "好吧，换个话题"}]
        turn, stored_as, _ = _ask(running, history)
    assert turn == f"{cut}@{before + 2}"
    # A session that held nothing before is said as the first time (as sent again, above).
    assert stored_as == ("new-session" if before == 0 else "next-turn")
    with Store(db_path) as store:
        assert [s.name for s in store.sessions.list_sessions()] == [cut]
        stored = store.history.messages(store.sessions.session(cut).id)
    assert [m.content for m in stored][:-1] == [m["content"] for m in history]
