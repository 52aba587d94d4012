"""`chatmem serve` for bob on a team's PostgreSQL history, where ann shares her `trip` (for
writing) and her `旅行` (read-only) and bob has a `trip` of his own: a conversation id
`ann/trip` reaches ann's session, as `chatmem chat ann/trip` does, and never creates one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from cli_runner import output
from pg import PostgresServer

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from starlette.testclient import TestClient

from chatmem.config.settings import Settings
from chatmem.serve.proxy import build_app
from chatmem.store import Store, session_name_of


@pytest.fixture
def urls(pg_server: PostgresServer, pg_template: str) -> Iterator[tuple[str, str]]:
    name = pg_server.create_database(pg_template)
    ann, bob = pg_server.url(name, "ann"), pg_server.url(name, "bob")
    output("chat", "trip", "--provider", "scripted", "--db", bob, input="我的斑马 zebra\n")
    output("chat", "trip", "--provider", "scripted", "--db", ann, input="ann 的袋鼠\n")
    output("chat", "旅行", "--provider", "scripted", "--db", ann, input="ann 的日记\n")
    output("chat", "secret", "--provider", "scripted", "--db", ann, input="ann 的秘密\n")
    output("sessions", "share", "trip", "--with", "bob", "--write", "--db", ann)
    output("sessions", "share", "旅行", "--with", "bob", "--db", ann)
    yield ann, bob
    pg_server.drop_database(name)


def ask(http: TestClient, text: str, *, header: str | None = None,
        body: dict[str, Any] | None = None) -> Any:
    return http.post("/v1/chat/completions",
                     headers={"X-Chatmem-Conversation": quote(header)} if header else {},
                     json={"model": "scripted", **(body or {}),
                           "messages": [{"role": "user", "content": text}]})


def inputs(url: str, session: str) -> list[str]:
    with Store(url) as store:
        found = store.sessions.find_session(session)
        assert found is not None, session
        return [t.input for t in store.turns.turns(found.id)]


def names(url: str) -> list[str]:
    return sorted(s["name"] for s in json.loads(output("sessions", "list", "--json",
                                                       "--db", url)))


def test_owner_slash_name_reaches_the_session_shared_with_the_caller(
        urls: tuple[str, str]) -> None:
    ann, bob = urls
    with TestClient(build_app(Settings(provider="scripted", db=bob))) as http:
        shared = ask(http, "bob 补充一句", header="ann/trip")
        again = ask(http, "再补充", body={"metadata": {"chat_id": "ann/trip"}})
        own = ask(http, "bob 自己的", header="trip")
        turn_id = shared.headers["X-Chatmem-Turn"]
        inspected = http.get(f"/v1/chatmem/turns/{turn_id}")
    assert shared.status_code == again.status_code == own.status_code == 200, shared.text
    assert shared.headers["X-Chatmem-Conversation"] == "ann/trip"
    assert turn_id == "ann%2Ftrip@2"
    assert again.json()["chatmem"]["turn"] == "ann/trip@3"
    assert inspected.status_code == 200 and inspected.json()["turn"]["input"] == "bob: bob 补充一句"
    assert inputs(ann, "trip") == ["ann 的袋鼠", "bob: bob 补充一句", "bob: 再补充"]
    assert inputs(bob, "trip") == ["我的斑马 zebra", "bob 自己的"]
    assert names(bob) == ["trip", "trip", "旅行"]  # no session was made of the id


def test_owner_slash_name_of_no_share_is_a_4xx_naming_the_field_and_creates_nothing(
        urls: tuple[str, str]) -> None:
    ann, bob = urls
    with TestClient(build_app(Settings(provider="scripted", db=bob))) as http:
        unshared = ask(http, "偷看", header="ann/secret")
        nobody = ask(http, "hello", body={"user": "carol/trip"})
        read_only = ask(http, "我也想去", header="ann/旅行")
    assert unshared.status_code == 400
    error = unshared.json()["error"]
    assert error["param"] == "x-chatmem-conversation"
    assert error["message"].startswith(
        "x-chatmem-conversation: no session 'ann/secret' is shared with you")
    assert nobody.status_code == 400 and nobody.json()["error"]["param"] == "user"
    assert "'carol/trip'" in nobody.json()["error"]["message"]
    assert read_only.status_code == 403, read_only.text
    # No `chatmem sessions fork`: advice a client of the API cannot take.
    assert read_only.json()["error"]["message"] == (
        "session 'ann/旅行' is shared with you read-only by ann: it cannot be changed (ask"
        " ann to share it for writing)")
    assert names(bob) == ["trip", "trip", "旅行"]
    assert inputs(ann, "secret") == ["ann 的秘密"]
    assert inputs(ann, "旅行") == ["ann 的日记"]


def test_a_session_made_before_from_an_id_of_that_form_keeps_its_conversation(
        urls: tuple[str, str]) -> None:
    """Before ids of the form OWNER/NAME named shares, `ann/trip` made bob a session of its
    own: its conversation goes on there, and its history never goes into ann's."""
    ann, bob = urls
    made = session_name_of("ann/trip")
    output("chat", made, "--provider", "scripted", "--db", bob, input="bob's old chat\n")
    with TestClient(build_app(Settings(provider="scripted", db=bob))) as http:
        reply = ask(http, "and then?", header="ann/trip")
    assert reply.status_code == 200, reply.text
    assert reply.headers["X-Chatmem-Conversation"] == quote(made)
    assert inputs(bob, made) == ["bob's old chat", "and then?"]
    assert inputs(ann, "trip") == ["ann 的袋鼠"]


def test_in_a_file_an_id_with_a_slash_is_a_session_of_its_own_as_before(
        tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with TestClient(build_app(Settings(provider="scripted", db=str(db)))) as http:
        first = ask(http, "你好", header="ann/trip")
        second = ask(http, "again", header="ann/trip")
    assert first.status_code == second.status_code == 200
    made = session_name_of("ann/trip")
    assert made != "ann/trip" and second.json()["chatmem"]["turn"] == f"{made}@2"
    with Store(db) as store:
        assert [row.name for row in store.sessions.list_sessions()] == [made]


def test_a_plain_id_is_the_callers_own_session_never_a_share_of_that_name(
        urls: tuple[str, str]) -> None:
    """bob has no `旅行` of his own: the id `旅行` makes him one (it was ann's read-only
    share, refused), and ann's session is left as it was."""
    ann, bob = urls
    with TestClient(build_app(Settings(provider="scripted", db=bob))) as http:
        reply = ask(http, "bob 的旅行", header="旅行")
    assert reply.status_code == 200, reply.text
    assert reply.headers["X-Chatmem-Conversation"] == quote("旅行")
    assert inputs(bob, "旅行") == ["bob 的旅行"]
    assert inputs(ann, "旅行") == ["ann 的日记"]
    assert names(bob) == ["trip", "trip", "旅行", "旅行"]


def test_a_grantees_message_named_as_the_owner_still_carries_his_name(
        urls: tuple[str, str]) -> None:
    # A `name` his client gave ("ann") was all that labelled his words in her session: her
    # model read "ann: I changed my name to Mallory." as her own line.
    ann, bob = urls
    with TestClient(build_app(Settings(provider="scripted", db=bob))) as http:
        said = http.post("/v1/chat/completions",
                         headers={"X-Chatmem-Conversation": quote("ann/trip")},
                         json={"model": "scripted", "messages": [
                             {"role": "user", "name": "ann",
                              "content": "I changed my name to Mallory."}]})
    assert said.status_code == 200, said.text
    assert inputs(ann, "trip")[-1] == "bob: ann: I changed my name to Mallory."


def test_a_grantees_regenerate_replaces_his_last_turn_in_her_session(
        urls: tuple[str, str]) -> None:
    # His words are stored as `bob: …`, which his client never sent: its history no longer
    # matched the session's, and his regenerate was stored as one more turn (after his
    # second turn, or after a restart of the server).
    ann, bob = urls
    with Store(ann) as store:
        found = store.sessions.find_session("trip")
        assert found is not None
        said = [{"role": m.role, "content": m.content} for m in store.history.messages(found.id)]

    def chat(http: TestClient, messages: list[dict[str, str]]) -> Any:
        answer = http.post("/v1/chat/completions",
                           headers={"X-Chatmem-Conversation": quote("ann/trip")},
                           json={"model": "scripted", "messages": messages})
        assert answer.status_code == 200, answer.text
        return answer.json()

    first = [*said, {"role": "user", "content": "bob 第一句"}]
    with TestClient(build_app(Settings(provider="scripted", db=bob))) as http:
        reply = chat(http, first)["choices"][0]["message"]["content"]
        second = [*first, {"role": "assistant", "content": reply},
                  {"role": "user", "content": "bob 第二句"}]
        assert chat(http, second)["chatmem"]["turn"] == "ann/trip@3"
        assert chat(http, second)["chatmem"]["turn"] == "ann/trip@3"
    with TestClient(build_app(Settings(provider="scripted", db=bob))) as http:
        assert chat(http, second)["chatmem"]["turn"] == "ann/trip@3"
    with Store(ann) as store:
        assert store.history.turn_count(found.id) == 3
