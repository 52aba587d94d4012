"""A chat edited after a purge: its client keeps its own copy, the purged value in it, and
sends it with each request; the session its edit goes on in keeps the erasure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from chat_server import ChatServer
from cli_runner import invoke

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from test_proxy import RunningProxy
from test_proxy_conversations import asker

from chatmem.config.settings import Settings
from chatmem.store import Store

SAID = [("My employer is Globex Corporation.", "Globex Corporation"),
        ("我在环球公司上班。", "环球公司")]


def _said_with(ask: Callable[[list[dict[str, str]]], tuple[str, str, str]], said: str
               ) -> tuple[list[dict[str, str]], str]:
    """A client's three exchanges, "Hello", `said` (what a purge will change) and "And
    then?": its copy of the chat and the last turn's id."""
    history: list[dict[str, str]] = []
    turn = ""
    for text in ("Hello", said, "And then?"):
        history.append({"role": "user", "content": text})
        reply, turn, _ = ask(history)
        history.append({"role": "assistant", "content": reply})
    return history, turn


def _purge(db_path: Path, name: str, value: str) -> None:
    with Store(db_path) as store:
        fact = store.facts.upsert_fact("employer", value, scope="session",
                                       session_id=store.sessions.session(name).id).id
    invoke("facts", "forget", str(fact), "--purge", "--yes", "--db", str(db_path), code=0)


def _histories(db_path: Path) -> dict[str, list[str]]:
    with Store(db_path) as store:
        return {s.name: [m.content for m in store.history.messages(s.id)][::2]
                for s in store.sessions.list_sessions()}


def _nowhere(db_path: Path, value: str) -> bool:
    data = b"".join(p.read_bytes() for p in db_path.parent.glob(f"{db_path.name}*"))
    return value.encode() not in data


@pytest.mark.parametrize(("said", "value"), SAID)
def test_an_edit_of_a_chat_no_id_names_keeps_a_purge_in_its_new_session(
        chat_server: ChatServer, db_path: Path, said: str, value: str) -> None:
    """Its edit of the last message begins a session of its own holding the client's
    history: that copy held the value the purge erased (`chat-…-2` had "Globex")."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="window") as running:
        ask = asker(running)
        history = [{"role": "user", "content": said}]
        reply, turn, _ = ask(history)
        history += [{"role": "assistant", "content": reply},
                    {"role": "user", "content": "What should I buy?"}]
        assert ask(history)[1:] == (turn.replace("@1", "@2"), "next-turn")
        name = turn.rpartition("@")[0]
        _purge(db_path, name, value)
        edited = [*history[:2], {"role": "user", "content": "What should I sell?"}]
        reply, turn, stored = ask(edited)
        assert (turn, stored) == (f"{name}-2@2", "new-session")
        edited += [{"role": "assistant", "content": reply}, {"role": "user", "content": "再说说"}]
        assert ask(edited)[1:] == (f"{name}-2@3", "next-turn")  # it goes on there
    erased = said.replace(value, "[forgotten]")
    assert _histories(db_path) == {name: [erased, "What should I buy?"],
                                   f"{name}-2": [erased, "What should I sell?", "再说说"]}
    assert _nowhere(db_path, value)


@pytest.mark.parametrize(("said", "value"), SAID)
def test_an_edit_of_an_earlier_message_of_a_named_chat_keeps_a_purge_in_its_branch(
        chat_server: ChatServer, db_path: Path, said: str, value: str) -> None:
    """The history it sent then no longer matched the session's (the client's copy holds
    the value): its edit was taken for the chat's next turn, after the messages it left; and
    branched, the new session stored the client's history, the value in it."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="window") as running:
        ask = asker(running, extra_headers={"X-Chatmem-Conversation": quote("工作")})
        history: list[dict[str, str]] = []
        for text in (said, "What should I buy?", "And then?"):
            history.append({"role": "user", "content": text})
            history.append({"role": "assistant", "content": ask(history)[0]})
        _purge(db_path, "工作", value)
        edited = [*history[:2], {"role": "user", "content": "What should I sell?"}]
        assert ask(edited)[1:] == ("工作@2", "branched")
    erased = said.replace(value, "[forgotten]")
    assert _histories(db_path) == {
        "工作": [erased, "What should I sell?"],
        "工作.before-edit-1": [erased, "What should I buy?", "And then?"]}
    assert _nowhere(db_path, value)


@pytest.mark.parametrize("of_it", [False, True], ids=["before", "of-it"])
@pytest.mark.parametrize(("said", "value"), SAID)
def test_an_edit_before_a_purged_message_of_a_named_chat_branches(
        chat_server: ChatServer, db_path: Path, said: str, value: str, of_it: bool) -> None:
    """The edited message came before the purged one, which the client no longer sends: the
    history its last request sent (the value in it) could not be matched with the session's
    (the marker in it), so the edit was taken for the chat's next turn, stored after the
    messages it left (工作@5 next-turn: the model was sent the history the user edited away)."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="buffer") as running:
        ask = asker(running, extra_headers={"X-Chatmem-Conversation": quote("工作")})
        history: list[dict[str, str]] = []
        for text in ("Hello", "What should I buy?", said, "And then?"):
            history.append({"role": "user", "content": text})
            history.append({"role": "assistant", "content": ask(history)[0]})
        _purge(db_path, "工作", value)
        # (or of the purged message itself, its words fitting around the marker)
        other = said.replace(value, "Initech" if value.isascii() else "别处")
        at, text = (4, other) if of_it else (2, "What should I sell?")
        edited = [*history[:at], {"role": "user", "content": text}]
        assert ask(edited)[1:] == (f"工作@{at // 2 + 1}", "branched")
    erased = said.replace(value, "[forgotten]")
    assert _histories(db_path) == {
        "工作": ["Hello", "What should I buy?", other] if of_it else ["Hello", text],
        "工作.before-edit-1": ["Hello", "What should I buy?", erased, "And then?"]}
    assert _nowhere(db_path, value)


@pytest.mark.parametrize(("said", "value"), SAID)
def test_a_regenerate_of_a_named_chat_s_purged_last_message_keeps_the_purge(
        chat_server: ChatServer, db_path: Path, said: str, value: str) -> None:
    """Its client asks the last exchange again with its own copy of the message, the value
    in it: that text replaced the stored one, and the purged value was stored again."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="buffer") as running:
        ask = asker(running, extra_headers={"X-Chatmem-Conversation": quote("工作")})
        history: list[dict[str, str]] = []
        for text in ("Hello", said):
            history.append({"role": "user", "content": text})
            history.append({"role": "assistant", "content": ask(history)[0]})
        _purge(db_path, "工作", value)
        assert ask(history[:3])[1:] == ("工作@2", "replaced-last-turn")
        # An edit is still one, also where its words fit around the marker.
        other = said.replace(value, "Initech" if value.isascii() else "别处")
        edited = [*history[:2], {"role": "user", "content": other}]
        assert ask(edited)[1:] == ("工作@2", "replaced-last-turn")
    assert _histories(db_path)["工作"] == ["Hello", other]
    assert _nowhere(db_path, value)


@pytest.mark.parametrize(("said", "value"), SAID)
def test_a_regenerate_of_a_purged_message_no_turn_holds_keeps_the_purge(
        chat_server: ChatServer, db_path: Path, said: str, value: str) -> None:
    """The last exchange was imported (no turn a regenerate may replace): the client's copy
    was stored as a turn of its own, the purged value in it, where a regenerate of a turn
    sends and stores the message as the purge left it."""
    with Store(db_path) as store:
        session = store.sessions.create_session("工作", "buffer", {}, provider="openai",
                                                model="test-small")
        store.history.import_messages(session.id, [
            {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"},
            {"role": "user", "content": said}, {"role": "assistant", "content": "Noted."}])
    _purge(db_path, "工作", value)
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="buffer") as running:
        ask = asker(running, extra_headers={"X-Chatmem-Conversation": quote("工作")})
        assert ask([{"role": "user", "content": "Hello"},
                    {"role": "assistant", "content": "Hi!"},
                    {"role": "user", "content": said}])[2] == "next-turn-last-kept"
    erased = said.replace(value, "[forgotten]")
    assert _histories(db_path)["工作"] == ["Hello", erased, erased]
    assert value not in chat_server.requests[-1]["messages"][-1]["content"]
    assert _nowhere(db_path, value)


@pytest.mark.parametrize(("said", "value"), SAID)
def test_a_regenerate_of_an_earlier_purged_message_after_a_restart_keeps_the_purge(
        chat_server: ChatServer, db_path: Path, said: str, value: str) -> None:
    """The client asks again the reply to its purged message, two exchanges back, of a
    server restarted since (nothing shows it an edit, so it is a turn of its own): its copy
    of the message was sent and stored as that turn, the purged value back in the file."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    headers = {"X-Chatmem-Conversation": quote("工作")}
    with RunningProxy(settings, strategy="buffer") as running:
        history = _said_with(asker(running, extra_headers=headers), said)[0]
    _purge(db_path, "工作", value)
    with RunningProxy(settings, strategy="buffer") as running:
        assert asker(running, extra_headers=headers)(history[:3])[1:] == ("工作@4", "next-turn")
    erased = said.replace(value, "[forgotten]")
    assert _histories(db_path)["工作"] == ["Hello", erased, "And then?", erased]
    assert value not in chat_server.requests[-1]["messages"][-1]["content"]
    assert _nowhere(db_path, value)
    # Another message after that same start is the client's own, as it typed it.
    with RunningProxy(settings, strategy="buffer") as running:
        assert asker(running, extra_headers=headers)(
            [*history[:2], {"role": "user", "content": "What should I buy?"}])[1:] == (
            "工作@5", "next-turn")
    assert _histories(db_path)["工作"][-1] == "What should I buy?"


@pytest.mark.parametrize(("said", "value"), SAID)
def test_a_regenerate_of_an_earlier_purged_message_of_a_chat_no_id_names_keeps_the_purge(
        chat_server: ChatServer, db_path: Path, said: str, value: str) -> None:
    """Asked again two exchanges back, the chat begins a session of its own: the history it
    shares with the one it left kept the erasure, but its new message, its copy of the
    purged one, was sent and stored with the value (`chat-…-2` held "Globex")."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="buffer") as running:
        ask = asker(running)
        history, turn = _said_with(ask, said)
        name = turn.rpartition("@")[0]
        _purge(db_path, name, value)
        assert ask(history[:3])[1:] == (f"{name}-2@2", "new-session")
        # Another message there is the client's own, as it typed it.
        assert ask([*history[:2], {"role": "user", "content": "再说说"}])[1:] == (
            f"{name}-3@2", "new-session")
    erased = said.replace(value, "[forgotten]")
    assert _histories(db_path) == {name: ["Hello", erased, "And then?"],
                                   f"{name}-2": ["Hello", erased],
                                   f"{name}-3": ["Hello", "再说说"]}
    assert value not in chat_server.requests[-2]["messages"][-1]["content"]
    assert _nowhere(db_path, value)


@pytest.mark.parametrize(("said", "value"), SAID)
def test_a_regenerate_of_an_earlier_purged_message_of_a_named_chat_branches_keeping_the_purge(
        chat_server: ChatServer, db_path: Path, said: str, value: str) -> None:
    """Its history left the session's, so it branched: the history it shares with the one
    kept kept the erasure, but its new message, its copy of the purged one, was sent and
    stored with the value (工作 held "Globex" beside 工作.before-edit-1's marker)."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="buffer") as running:
        ask = asker(running, extra_headers={"X-Chatmem-Conversation": quote("工作")})
        history = _said_with(ask, said)[0]
        _purge(db_path, "工作", value)
        assert ask(history[:3])[1:] == ("工作@2", "branched")
    erased = said.replace(value, "[forgotten]")
    assert _histories(db_path) == {"工作": ["Hello", erased],
                                   "工作.before-edit-1": ["Hello", erased, "And then?"]}
    assert value not in chat_server.requests[-1]["messages"][-1]["content"]
    assert _nowhere(db_path, value)


@pytest.mark.parametrize(("said", "value"), SAID)
def test_a_regenerate_of_the_first_reply_to_a_purged_opening_of_a_chat_no_id_names_keeps_the_purge(
        chat_server: ChatServer, db_path: Path, said: str, value: str) -> None:
    """The purged value in the chat's first message (the opening it is named by) and its
    first reply asked again (the client sends that message alone): the chat began a session
    of its own with the client's copy, sent and stored with the value, and went on there."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="buffer") as running:
        ask = asker(running)
        history: list[dict[str, str]] = []
        for text in (said, "Hello", "And then?"):
            history.append({"role": "user", "content": text})
            reply, turn, _ = ask(history)
            history.append({"role": "assistant", "content": reply})
        name = turn.rpartition("@")[0]
        _purge(db_path, name, value)
        assert ask(history[:1])[1:] == (f"{name}-2@1", "new-session")
        assert ask([history[0], {"role": "assistant", "content": reply},
                    {"role": "user", "content": "再说说"}])[1:] == (f"{name}-2@2", "next-turn")
    erased = said.replace(value, "[forgotten]")
    assert _histories(db_path) == {name: [erased, "Hello", "And then?"],
                                   f"{name}-2": [erased, "再说说"]}
    assert all(value not in m["content"] for r in chat_server.requests[-2:]
               for m in r["messages"])
    assert _nowhere(db_path, value)


@pytest.mark.parametrize(("said", "value", "edited"),
                         [(*SAID[0], "My employer is Initech."), (*SAID[1], "我在微软公司上班。")])
def test_an_edit_fitting_around_a_purge_of_a_chat_no_id_names_is_the_client_s(
        chat_server: ChatServer, db_path: Path, said: str, value: str, edited: str) -> None:
    """The client edits its purged message, two exchanges back, with other words where the
    marker stands, and this server answered that message (it knows the one it was sent):
    its edit was taken for a regenerate, and the marker sent and stored in its place (the
    reply was to "My employer is [forgotten]." and the client's "Initech" was lost)."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    with RunningProxy(settings, strategy="buffer") as running:
        ask = asker(running)
        history, turn = _said_with(ask, said)
        name = turn.rpartition("@")[0]
        _purge(db_path, name, value)
        assert ask([*history[:2], {"role": "user", "content": edited}])[1:] == (
            f"{name}-2@2", "new-session")
        # Its regenerate still keeps the purge.
        assert ask(history[:3])[1:] == (f"{name}-3@2", "new-session")
    erased = said.replace(value, "[forgotten]")
    assert _histories(db_path) == {name: ["Hello", erased, "And then?"],
                                   f"{name}-2": ["Hello", edited],
                                   f"{name}-3": ["Hello", erased]}
    assert chat_server.requests[-2]["messages"][-1]["content"] == edited
    assert _nowhere(db_path, value)
