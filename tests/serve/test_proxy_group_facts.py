"""Through `chatmem serve`, with `user_facts = true` and the entity strategy: what a group
chat's member says (a message with a `name`) is theirs, never the profile owner's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke
from registered import open_session
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings
from chatmem.memory.extraction_request import extraction_messages
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import FactScope, Store


def _post(running: RunningProxy, conversation: str, message: dict[str, Any]) -> None:
    answer = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                        headers={"X-Chatmem-Conversation": conversation},
                        json={"model": "x", "messages": [message]})
    assert answer.status_code == 200, answer.text


def _facts_block(db: Path, session: str, asked: str) -> str:
    with Store(db) as store:
        engine = open_session(store, Settings(user_facts=True), ScriptedProvider(), session,
                              strategy="entity")
        context = engine.build_context(asked)
    (part,) = [p for p in context.parts if p.kind == "facts"]
    return part.messages[0].content


def test_a_group_chat_members_facts_stay_theirs_in_their_session(db_path: Path) -> None:
    """bob's "I am allergic to penicillin." sent through serve in a Discord group chat became
    `allergy penicillin` in the owner's profile, sent as "Facts the user stated" in every
    private session of theirs, and the line "alice: I live in Lisbon." inside bob's message
    read as alice's. A message with a speaker sets its session's facts only, sent there as
    that speaker's; the owner's own served message (no name) still reaches the profile."""
    settings = Settings(provider="scripted", db=str(db_path), user_facts=True)
    with RunningProxy(settings, strategy="entity") as running:
        _post(running, "mine", {"role": "user", "content": "My name is Ana."})
        _post(running, "discord", {"role": "user", "name": "bob", "content":
                                   "I am allergic to penicillin.\nalice: I live in Lisbon."})
        _post(running, "discord", {"role": "user", "name": "小明", "content": "我叫小明。"})
        # The next turn of each catches its facts up, whenever the extraction ran.
        _post(running, "discord", {"role": "user", "name": "bob", "content": "ok"})
        _post(running, "mine", {"role": "user", "content": "hello"})
    with Store(db_path) as store:
        discord = store.sessions.session("discord").id
        facts = {(f.key, f.value): f for f in store.facts.facts(user=None, session_id=discord)}
        profile = [(f.key, f.value) for f in store.facts.facts(user=None, session_id=None)
                   if f.scope == FactScope.USER]
    assert profile == [("name", "Ana")]
    # 小明's 名字 is the profile's name (same_as): the group chat's own value, beside Ana.
    assert {k: (f.scope, f.session_id) for k, f in facts.items()} == {
        ("allergy", "penicillin"): (FactScope.SESSION, discord),
        ("city", "Lisbon"): (FactScope.SESSION, discord),
        ("name", "小明"): (FactScope.SESSION, discord),
    }
    mine = _facts_block(db_path, "mine", "what do you know about me?")
    assert "penicillin" not in mine and "Lisbon" not in mine and "小明" not in mine
    assert mine.startswith("Facts the user stated")
    group = _facts_block(db_path, "discord", "who is allergic to what?")
    lines = [json.loads(line) for line in group.split("\n")[2:-1]]
    assert group.startswith("Facts stated in this conversation")
    # bob said both of his: "alice: …" inside his message is his text, not alice's turn.
    # 小明's name sits beside the owner's, which it does not hide.
    assert [line[1:] for line in lines] == [
        ["name", "Ana", 1, "mine"], ["allergy", "penicillin", 1, None, "bob"],
        ["city", "Lisbon", 1, None, "bob"],
        ["name", "小明", 2, None, "小明"]]


@pytest.mark.parametrize("name", ["user", "User", "ｕｓｅｒ", "uѕer", "[user]"])
def test_a_member_named_by_the_user_roles_word_does_not_speak_for_the_owner(
        db_path: Path, name: str) -> None:
    """A name spelling the user role's word (AutoGen's "user", a member's display name
    "User", full-width or Cyrillic look-alikes) was read as no speaker at all: "I am allergic
    to penicillin." sent so in a group chat became the owner's profile fact. It is still
    written without a label, but it is a named member's: its facts stay in its session."""
    settings = Settings(provider="scripted", db=str(db_path), user_facts=True)
    with RunningProxy(settings, strategy="entity") as running:
        _post(running, "discord", {"role": "user", "name": name,
                                   "content": "I am allergic to penicillin."})
        _post(running, "discord", {"role": "user", "name": "bob", "content": "ok"})
        _post(running, "mine", {"role": "user", "content": "hello"})
    with Store(db_path) as store:
        discord = store.sessions.session("discord").id
        stored = store.history.messages(discord)
        group = [(f.key, f.value, f.scope) for f in store.facts.facts(user=None,
                                                                     session_id=discord)]
        profile = [(f.key, f.value) for f in store.facts.facts(user=None, session_id=None)
                   if f.scope == FactScope.USER]
    assert stored[0].content == "I am allergic to penicillin."
    assert profile == []
    assert group == [("allergy", "penicillin", FactScope.SESSION)]


def test_a_speakers_message_reaches_the_extractor_with_its_speaker_apart() -> None:
    """The extractor read bob's message as "bob: I like tea\\nalice: I approve": alice's line
    by its look. The speaker is a field of its own and the text is bob's words alone."""
    sent = extraction_messages([], [(1, "bob: I like tea\nalice: I approve"),
                                    (2, "Flight BA117: it lands at 9")], speakers={1: "bob"})
    assert json.loads(sent[1]["content"])["messages"] == [
        {"turn": 1, "speaker": "bob", "text": "I like tea\nalice: I approve"},
        {"turn": 2, "text": "Flight BA117: it lands at 9"}]


def _post_all(running: RunningProxy, conversation: str, messages: list[dict[str, Any]]) -> str:
    answer = httpx.post(f"{running.base_url}/chat/completions", timeout=HANG,
                        headers={"X-Chatmem-Conversation": conversation},
                        json={"model": "x", "messages": messages})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["choices"][0]["message"]["content"])


def _group_chat(db_path: Path) -> None:
    """bob's message and alice's sent by a Discord bot in one request, then alice's next."""
    settings = Settings(provider="scripted", db=str(db_path), user_facts=True)
    with RunningProxy(settings, strategy="entity") as running:
        said = [{"role": "user", "name": "bob", "content": "I am allergic to penicillin."},
                {"role": "user", "name": "alice", "content": "hi"}]
        reply = _post_all(running, "discord", said)
        # The bot's next request carries the chat so far; its turn catches the facts up.
        _post_all(running, "discord", [*said, {"role": "assistant", "content": reply},
                                       {"role": "user", "name": "alice", "content": "ok"}])


def _speakers(db_path: Path, session: str) -> list[str | None]:
    with Store(db_path) as store:
        found = store.sessions.session(session).id
        ids = [m.id for m in store.history.messages(found) if m.role == "user"]
        said_by = store.history.speakers(found, ids)
    return [said_by.get(i) for i in ids]


def test_several_named_messages_in_one_request_each_keep_their_speaker(db_path: Path) -> None:
    """A Discord bot sent bob's message and alice's in one request: bob's was stored as the
    client's history, without a turn, so his speaker was recorded nowhere, and his allergy
    was sent as "Facts the user stated" with no speaker. Every named message keeps its own."""
    _group_chat(db_path)
    assert _speakers(db_path, "discord") == ["bob", "alice", "alice"]
    with Store(db_path) as store:
        profile = [f for f in store.facts.facts(user=None, session_id=None)
                   if f.scope == FactScope.USER]
    assert profile == []
    group = _facts_block(db_path, "discord", "who is allergic to what?")
    assert group.startswith("Facts stated in this conversation")
    assert [json.loads(line)[1:] for line in group.split("\n")[2:-1]] == [
        ["allergy", "penicillin", 1, None, "bob"]]


def test_a_fork_of_a_group_chat_keeps_who_said_what(db_path: Path) -> None:
    """`sessions fork discord f` copied the messages but not the turns recording their
    speakers: bob's allergy was sent in the fork as "Facts the user stated"."""
    _group_chat(db_path)
    result = invoke("sessions", "fork", "discord", "f", "--db", str(db_path))
    assert result.exit_code == 0, result.stderr
    assert _speakers(db_path, "f") == ["bob", "alice", "alice"]
    group = _facts_block(db_path, "f", "who is allergic to what?")
    assert group.startswith("Facts stated in this conversation")
    assert [json.loads(line)[1:] for line in group.split("\n")[2:-1]] == [
        ["allergy", "penicillin", 1, None, "bob"]]
    # At turn 1: bob's message alone, and what was said after it is not the fork's.
    result = invoke("sessions", "fork", "discord", "g", "--at-turn", "1", "--db", str(db_path))
    assert result.exit_code == 0, result.stderr
    assert _speakers(db_path, "g") == ["bob"]
    with Store(db_path) as store:
        g = store.sessions.session("g").id
        store.history.import_messages(g, [{"role": "user", "content": "mine"}])
    assert _speakers(db_path, "g") == ["bob", None]


def test_facts_list_and_inspect_name_the_member_who_said_it(db_path: Path) -> None:
    """`facts list` showed bob's allergy with its turn alone (text and --json), and
    `inspect` showed alice's input without saying who said it but by the label in its
    text, which anyone can type. Both name the member the request named."""
    _group_chat(db_path)
    listed = invoke("facts", "list", "discord", "--json", "--db", str(db_path))
    assert listed.exit_code == 0, listed.stderr
    (row,) = [r for r in json.loads(listed.stdout) if r["key"] == "allergy"]
    assert (row["speaker"], row["source"]) == ("bob", "turn 1 of session discord by bob")
    table = invoke("facts", "list", "discord", "--db", str(db_path), width=200)
    assert table.exit_code == 0, table.stderr
    assert "turn 1 of session discord by bob" in table.stdout
    shown = invoke("inspect", "discord", "--json", "--db", str(db_path))
    assert shown.exit_code == 0, shown.stderr
    assert (json.loads(shown.stdout)["input"], json.loads(shown.stdout)["speaker"]) == (
        "alice: ok", "alice")
    text = invoke("inspect", "discord", "--db", str(db_path), width=200)
    assert text.exit_code == 0, text.stderr
    assert [line.split() for line in text.stdout.splitlines() if "speaker" in line][:1] == [
        ["speaker", "alice"]]


def test_a_users_own_fact_and_input_name_no_speaker(db_path: Path) -> None:
    settings = Settings(provider="scripted", db=str(db_path), user_facts=True)
    with RunningProxy(settings, strategy="entity") as running:
        _post(running, "mine", {"role": "user", "content": "My name is Ana."})
        _post(running, "mine", {"role": "user", "content": "hello"})
    listed = invoke("facts", "list", "--json", "--db", str(db_path))
    assert [(r["key"], r["speaker"]) for r in json.loads(listed.stdout)] == [("name", None)]
    shown = invoke("inspect", "mine", "--json", "--db", str(db_path))
    assert json.loads(shown.stdout)["speaker"] is None
    assert "speaker" not in invoke("inspect", "mine", "--db", str(db_path), width=200).stdout


def test_an_exported_group_chat_keeps_who_said_what_when_imported(db_path: Path,
                                                                   tmp_path: Path) -> None:
    """`sessions export` wrote bob's and alice's messages without their `name`, so the
    session imported from it (or replayed) read every message as the user's. The export
    writes each member's `name`, and the import keeps it."""
    _group_chat(db_path)
    out = tmp_path / "discord.jsonl"
    exported = invoke("sessions", "export", "discord", "-o", str(out), "--db", str(db_path))
    assert exported.exit_code == 0, exported.stderr
    written = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [(m.get("name"), m["content"]) for m in written if m.get("role") == "user"] == [
        ("bob", "bob: I am allergic to penicillin."), ("alice", "alice: hi"),
        ("alice", "alice: ok")]
    imported = invoke("sessions", "import", str(out), "--name", "again", "--db", str(db_path))
    assert imported.exit_code == 0, imported.stderr
    assert _speakers(db_path, "again") == ["bob", "alice", "alice"]
