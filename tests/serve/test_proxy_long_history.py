"""Through `chatmem serve`: a long history a client sends for a new conversation is stored
as an import is, in batches under an unfinished name that takes the conversation's name at
the end (tests/app/test_adopt_batches.py shows another process writing between them).

Review: 400,000 messages (a 49 KB gzip body) went in one 35 s write, and a concurrent
`chatmem ask` on the same file waited 26.8 s."""

from __future__ import annotations

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

REPLY = "Hello from the test server."


def _post(running: RunningProxy, messages: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                      headers={"X-Chatmem-Conversation": "gz3"},
                      json={"model": "test-small", "messages": messages})


def served(chat_server: ChatServer, db_path: Path) -> Settings:
    """serve's settings: the test's model server, the test's history file."""
    return Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                    db=str(db_path))


def history(count: int) -> list[dict[str, Any]]:
    """A client's history of `count` messages, an assistant's first, in two languages."""
    return [{"role": "user" if i % 2 else "assistant", "content": f"第{i}句 line {i}"}
            for i in range(1, count + 1)]


def test_a_long_history_is_stored_whole_in_batches_and_the_chat_goes_on(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chatmem.app.session_files.IMPORT_BATCH", 4)
    settings = served(chat_server, db_path)
    said = history(11)
    with RunningProxy(settings, strategy="buffer") as running:
        first = _post(running, said)
        assert first.status_code == 200, first.text
        said += [{"role": "assistant", "content": REPLY}, {"role": "user", "content": "再见"}]
        second = _post(running, said)
        assert second.status_code == 200, second.text
    assert [a.headers["X-Chatmem-Stored-As"] for a in (first, second)] == ["new-session",
                                                                          "next-turn"]
    assert [a.headers["X-Chatmem-Turn"] for a in (first, second)] == ["gz3@6", "gz3@7"]
    # The model was asked with the whole history, both times.
    assert [[m["content"] for m in r["messages"] if m["role"] != "system"]
            for r in chat_server.requests] == [[m["content"] for m in said[:11]],
                                               [m["content"] for m in said]]
    with Store(db_path) as store:
        assert [row.name for row in store.sessions.list_sessions()] == ["gz3"]
        session = store.sessions.session("gz3")
        assert session.strategy == "buffer"
        stored = [(m.role, m.content) for m in store.history.messages(session.id)]
        turns = store.turns.turns(session.id)
    assert stored == [(m["role"], m["content"]) for m in said] + [("assistant", REPLY)]
    assert [t.turn for t in turns] == [6, 7]


def test_a_history_sent_to_a_conversation_another_front_end_wrote_is_stored_whole_after_it(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: a 500 said "send the request again" (a terminal's `ask` wrote the session while
    the client's history was stored); the request sent again got a 200, but the session held
    the terminal's turn and then the client's history from its third message on."""
    from cli_runner import invoke

    monkeypatch.setattr("chatmem.app.session_files.IMPORT_BATCH", 4)
    invoke("ask", "gz3", "终端里插一句 typed in the terminal", "--provider", "scripted",
           "--db", str(db_path), code=0)
    with Store(db_path) as store:
        terminal = [(m.role, m.content)
                    for m in store.history.messages(store.sessions.session("gz3").id)]
    settings = served(chat_server, db_path)
    said = history(11)
    with RunningProxy(settings, strategy="buffer") as running:
        again = _post(running, said)
        assert again.status_code == 200, again.text
        said += [{"role": "assistant", "content": REPLY}, {"role": "user", "content": "再见"}]
        after = _post(running, said)
        assert after.status_code == 200, after.text
    assert [a.headers["X-Chatmem-Turn"] for a in (again, after)] == ["gz3@7", "gz3@8"]
    with Store(db_path) as store:
        session = store.sessions.session("gz3")
        stored = [(m.role, m.content) for m in store.history.messages(session.id)]
    assert len(terminal) == 2
    assert stored == terminal + [(m["role"], m["content"]) for m in said] + [
        ("assistant", REPLY)]


def test_a_long_history_sent_to_an_empty_session_that_was_there_keeps_its_fact(
        chat_server: ChatServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: `keepme` held only a /remember'd fact and a /system prompt; a client's 2,201
    messages under its id replaced it with a copy, and `facts list keepme` said "No facts
    yet"."""
    from cli_runner import invoke

    monkeypatch.setattr("chatmem.app.session_files.IMPORT_BATCH", 4)
    invoke("chat", "gz3", "--provider", "scripted", "--db", str(db_path), code=0,
           input="/remember 储物柜密码 my locker code is 4417\n/system 你是海盗 a pirate\n/quit\n")
    with Store(db_path) as store:
        there = store.sessions.session("gz3")
        remembered = [(f.key, f.value) for f in store.facts.facts(session_id=there.id)]
    assert remembered and there.system == "你是海盗 a pirate"
    settings = served(chat_server, db_path)
    said = history(11)
    with RunningProxy(settings, strategy="buffer") as running:
        answer = _post(running, said)
        assert answer.status_code == 200, answer.text
    with Store(db_path) as store:
        assert [row.name for row in store.sessions.list_sessions()] == ["gz3"]
        session = store.sessions.session("gz3")
        kept = [(f.key, f.value) for f in store.facts.facts(session_id=session.id)]
        stored = [(m.role, m.content) for m in store.history.messages(session.id)]
    assert session.id == there.id
    assert kept == remembered
    assert stored == [(m["role"], m["content"]) for m in said] + [("assistant", REPLY)]
