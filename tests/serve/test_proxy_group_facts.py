"""Through `chatmem serve`, with `user_facts = true` and the entity strategy: what a group
chat's member says (a message with a `name`) is theirs, never the profile owner's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from registered import open_session
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy

from chatmem.config.settings import Settings
from chatmem.memory.extraction import extraction_messages
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
    assert [line[1:] for line in lines] == [
        ["allergy", "penicillin", 1, None, "bob"], ["city", "Lisbon", 1, None, "bob"],
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
