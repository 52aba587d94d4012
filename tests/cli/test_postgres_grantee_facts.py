"""Whose profile a turn in a shared session teaches (PostgreSQL, `user_facts = true`): a write
share's grantee is another person, so what he says in the owner's session never becomes the
owner's profile (his facts there are named as his, as a group chat member's are), nor what
she says there his, whichever of the two extracts it (a turn whose facts were not extracted
at once is caught up by whoever runs the session's next turn)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import chat, run
from grantees import profile, session_facts, shared_after
from pg import Team

pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")


@pytest.mark.parametrize("words", [
    ("My name is Mallory.", "name", "Mallory", "My name is Ann.", "Ann"),
    ("我住在深圳。", "城市", "深圳", "我住在杭州。", "杭州"),
])
def test_a_grantees_statement_caught_up_by_the_owner_is_not_her_profile(
        team: Team, tmp_path: Path, words: tuple[str, str, str, str, str]) -> None:
    his, key, his_value, hers, her_value = words
    ann, bob, config = shared_after(team, tmp_path, hers)
    c = ("--config", str(config))
    assert profile(ann, config) == {key: her_value}
    # Bob's run extracts nothing (his strategy holds for his run: a helper down does the
    # same), so the owner's next turn catches his up.
    run(bob, "ask", "ann/proj", his, "--strategy", "buffer", *c, code=0)
    run(ann, "ask", "proj", "ok", *c, code=0)
    assert profile(ann, config) == {key: her_value}
    # Kept, in the session, as his: the model is told bob stated it, not the user.
    assert session_facts(ann, "proj", config) == {key: (his_value, "bob")}
    # The other way: her statement, caught up by his run, is not his profile.
    run(ann, "ask", "proj", "I am allergic to penicillin.", "--strategy", "buffer", *c, code=0)
    run(bob, "ask", "ann/proj", "hi", *c, code=0)
    assert profile(bob, config) == {}
    assert session_facts(bob, "ann/proj", config)["allergy"] == ("penicillin", None)


@pytest.mark.parametrize("words", [
    ("My name is Ann.", "My name is Mallory.", "name", "Ann", "Mallory"),
    ("我叫安娜。", "我叫小明。", "名字", "安娜", "小明"),
])
def test_a_grantees_value_of_her_key_sits_beside_her_profile_fact(
        team: Team, tmp_path: Path, words: tuple[str, str, str, str, str]) -> None:
    """bob's "My name is Mallory." in ann's session was the session's own value of `name`,
    which hides the profile's: `inspect proj --next "who am I?"` sent her model only
    `[8,"name","Mallory",2,null,"bob"]`, not her own name. Both are sent, his as his."""
    hers, his, key, her_value, his_value = words
    ann, bob, config = shared_after(team, tmp_path, hers)
    c = ("--config", str(config))
    run(bob, "ask", "ann/proj", his, *c, code=0)
    assert profile(ann, config) == {key: her_value}
    assert session_facts(ann, "proj", config) == {key: (his_value, "bob")}
    shown = json.loads(run(ann, "inspect", "proj", "--next", "who am I?", "--json", *c,
                           code=0).stdout)
    (block,) = [m["content"] for p in shown["context"]["parts"] if p["kind"] == "facts"
                for m in p["messages"]]
    sent = [json.loads(line)[1:] for line in block.split("\n")[2:-1]]
    assert [key, her_value] in [line[:2] for line in sent]
    assert [key, his_value, 2, None, "bob"] in sent


@pytest.mark.parametrize("words", [
    ("My name is Ann.", "My name is Bob.", "name", "Ann", "Bob"),
    ("我叫安娜。", "我叫小明。", "名字", "安娜", "小明"),
])
def test_the_owners_session_value_is_hers_in_the_grantees_view(
        team: Team, tmp_path: Path, words: tuple[str, str, str, str, str]) -> None:
    """ann's session-only "My name is Ann." has no speaker, so bob's run on ann/proj read it
    as his own session value: `inspect ann/proj --next "who am I?"` as bob sent only
    `[1,"name","Ann",1]` under "Facts the user stated", hiding his profile's Bob. His
    profile fact is sent as his, hers beside it named as ann's."""
    hers, his, key, her_value, his_value = words
    session_only = tmp_path / "session.toml"
    session_only.write_text('provider = "scripted"\nuser_facts = false\n', encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text('provider = "scripted"\nuser_facts = true\n', encoding="utf-8")
    ann, bob = team.url("ann"), team.url("bob")
    c = ("--config", str(config))
    run(ann, "ask", "proj", hers, "--strategy", "entity", "--save", "--config",
        str(session_only), code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    run(bob, "ask", "mine", his, "--strategy", "entity", "--save", *c, code=0)
    assert profile(bob, config) == {key: his_value}
    shown = json.loads(run(bob, "inspect", "ann/proj", "--next", "who am I?", "--json", *c,
                           code=0).stdout)
    (block,) = [m["content"] for p in shown["context"]["parts"] if p["kind"] == "facts"
                for m in p["messages"]]
    sent = [json.loads(line)[1:] for line in block.split("\n")[2:-1]]
    assert [key, her_value, 1, None, "ann"] in sent
    assert [key, his_value, 1, "mine"] in sent
    # Her view is unchanged: her own value, stated by no one else.
    shown = json.loads(run(ann, "inspect", "proj", "--next", "who am I?", "--json", *c,
                           code=0).stdout)
    (block,) = [m["content"] for p in shown["context"]["parts"] if p["kind"] == "facts"
                for m in p["messages"]]
    assert [json.loads(line)[1:] for line in block.split("\n")[2:-1]] == [[key, her_value, 1]]


@pytest.mark.parametrize(("hers", "his", "key", "values"), [
    ("city: Hangzhou", "city: Shenzhen", "city", ("Hangzhou", "Shenzhen")),
    ("城市：杭州", "城市：深圳", "城市", ("杭州", "深圳"))], ids=["en", "zh"])
def test_a_grantees_remembered_value_lives_beside_the_owners(
        team: Team, tmp_path: Path, hers: str, his: str, key: str,
        values: tuple[str, str]) -> None:
    """Bob's /remember in ann's session replaced her value of the key, and was read as hers
    (a fact no turn stated is the owner's): now each keeps their own, his named as his."""
    config = tmp_path / "config.toml"
    config.write_text('provider = "scripted"\n', encoding="utf-8")
    ann, bob = team.url("ann"), team.url("bob")
    c = ("--config", str(config))
    run(ann, "ask", "proj", "hi", "--strategy", "entity", "--save", *c, code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    chat(ann, "proj", [f"/remember {hers}"], *c, code=0)
    chat(bob, "ann/proj", [f"/remember {his}"], *c, code=0)
    listed = json.loads(run(ann, "facts", "list", "proj", "--json", *c, code=0).stdout)
    assert [(f["key"], f["value"], f["speaker"]) for f in listed] == [
        (key, values[0], None), (key, values[1], "bob")]


@pytest.mark.parametrize(("his", "history"), [
    ("我叫鲍勃。My name is Bob.", ["鲍勃"]),
    ("My name is Bob. 我叫鲍勃。", ["Bob"]),
], ids=["zh-then-en", "en-then-zh"])
def test_the_owner_reading_a_grantees_turn_again_adds_nothing_to_its_history(
        team: Team, tmp_path: Path, his: str, history: list[str]) -> None:
    """The owner's next turn reads bob's turn again (his extraction marker is his own), and
    his turn naming himself twice ("我叫鲍勃。My name is Bob.") was applied again over his
    own value: `facts list proj` showed `Bob ← 鲍勃 ← Bob ← 鲍勃`, three history entries of
    one statement. Read again, a message already read into a fact changes nothing."""
    ann, bob, config = shared_after(team, tmp_path, "我叫安娜。", user_facts=False)
    c = ("--config", str(config))
    run(bob, "ask", "ann/proj", his, *c, code=0)
    run(ann, "ask", "proj", "ok", *c, code=0)
    facts = json.loads(run(ann, "facts", "list", "proj", "--json", code=0).stdout)
    (mine,) = [f for f in facts if f["speaker"] == "bob"]
    assert [h["value"] for h in mine["history"]] == history
    assert [f["value"] for f in facts if f["speaker"] is None] == ["安娜"]
