"""A session fact keeps who stated it: in a group chat one key holds a value per speaker, so
the owner's "我住在罗马。" no longer replaces bob's "我住在巴黎。" (nor his hers), a
retraction forgets its speaker's value only, and forks and archives keep who stated each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run
from conftest import History
from registered import open_session

from chatmem.app import Workspace, facts, sessions
from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

OWNER = Settings(system="Be brief.", user="ana", user_facts=False)
CASES = {
    "zh": ("城市", "我住在{}。", ("罗马", "巴黎", "米兰", "里昂"), "忘掉我的城市。"),
    "en": ("city", "I live in {}.", ("Rome", "Paris", "Milan", "Lyon"), "Forget my city."),
}


def sent(engine: Engine) -> list[list[object]]:
    """The facts block's lines as the model is sent them: [key, value, turn, (session,
    speaker)]."""
    part = engine.build_context("hi").part("facts")
    if part is None:
        return []
    return [json.loads(line)[1:] for line in part.messages[0].content.split("\n")[2:-1]]


def kept(store: Store, engine: Engine) -> list[tuple[str, str, str | None]]:
    return [(f.key, f.value, f.speaker)
            for f in store.facts.facts(user="ana", session_id=engine.session.id)]


@pytest.mark.parametrize("lang", CASES)
@pytest.mark.parametrize("bob_first", [True, False], ids=["bob-first", "owner-first"])
def test_each_speakers_value_of_a_key_is_kept(store: Store, scripted: ScriptedProvider,
                                              lang: str, bob_first: bool) -> None:
    key, lives, (rome, paris, milan, lyon), _ = CASES[lang]
    group = open_session(store, OWNER, scripted, "group", strategy="entity")
    turns = [(f"bob: {lives.format(paris)}", "bob"), (lives.format(rome), None)]
    for text, speaker in turns if bob_first else turns[::-1]:
        group.run_turn(text, speaker=speaker)
    bob_turn, her_turn = (1, 2) if bob_first else (2, 1)
    lines = sent(group)
    assert [key, paris, bob_turn, None, "bob"] in lines and [key, rome, her_turn] in lines, lines
    assert sorted(kept(store, group), key=str) == sorted(
        [(key, rome, None), (key, paris, "bob")], key=str)
    # Said again, each speaker's own value changes, the other's stays.
    group.run_turn(lives.format(milan))
    group.run_turn(f"bob: {lives.format(lyon)}", speaker="bob")
    assert sorted(kept(store, group), key=str) == sorted(
        [(key, milan, None), (key, lyon, "bob")], key=str)


@pytest.mark.parametrize("lang", CASES)
def test_a_retraction_forgets_its_speakers_value_only(store: Store, scripted: ScriptedProvider,
                                                      lang: str) -> None:
    key, lives, (rome, paris, *_), forget = CASES[lang]
    group = open_session(store, OWNER, scripted, "group", strategy="entity")
    group.run_turn(lives.format(rome))
    group.run_turn(f"bob: {lives.format(paris)}", speaker="bob")
    group.run_turn(f"bob: {forget}", speaker="bob")
    assert kept(store, group) == [(key, rome, None)]
    group.run_turn(f"bob: {lives.format(paris)}", speaker="bob")
    group.run_turn(forget)
    assert kept(store, group) == [(key, paris, "bob")]


def test_a_fork_and_an_archive_keep_who_stated_each_value(
        history: History, scripted: ScriptedProvider, tmp_path: Path) -> None:
    with history.open() as store:
        group = open_session(store, OWNER, scripted, "group", strategy="entity")
        group.run_turn("bob: 我住在巴黎。", speaker="bob")
        group.run_turn("我住在罗马。")
        before = sorted(kept(store, group), key=str)
        store.forks.fork_session("group", "copy")
        copy = store.sessions.session("copy")
        assert sorted(((f.key, f.value, f.speaker) for f in store.facts.facts(
            session_id=copy.id)), key=str) == before
    archive = tmp_path / "all.zip"
    run(history.location, "sessions", "export", "--all", "-o", str(archive), code=0)
    target = tmp_path / "restored.db"
    run(target, "sessions", "import", str(archive), code=0)
    with Store(target, key=history.key) as restored:
        group_id = restored.sessions.session("group").id
        assert sorted(((f.key, f.value, f.speaker) for f in restored.facts.facts(
            session_id=group_id)), key=str) == before
        engine = open_session(restored, OWNER, scripted, "group", strategy="entity")
        lines = sent(engine)
        assert ["城市", "巴黎", 1, None, "bob"] in lines and ["城市", "罗马", 2] in lines, lines


M022 = "m022_facts_keep_who_stated_them"
ROWS = "SELECT id, key, value, source_message_id, source_turn, updated_at FROM facts ORDER BY id"


@pytest.mark.sqlite_only("the file's migration (PostgreSQL's: test_postgres_writers)")
@pytest.mark.parametrize("said", ["turn", "remember"])
def test_a_file_from_before_upgrades_its_facts_read_as_before(
        history: History, scripted: ScriptedProvider, said: str) -> None:
    with history.open() as store:
        group = open_session(store, OWNER, scripted, "group", strategy="entity")
        group.run_turn("bob: 我住在巴黎。", speaker="bob")
        group.run_turn("My name is Ana.")
        # The file as chatmem wrote it before m022: one row a key, no speaker kept.
        with store.db.write():
            store.db.execute("ALTER TABLE facts DROP COLUMN speaker")
            store.db.execute("DELETE FROM _sqlite_migrations WHERE name = ?", [M022])
        rows = store.db.execute(ROWS).fetchall()
    with history.open() as store:
        assert store.db.execute(ROWS).fetchall() == rows
        group = open_session(store, OWNER, scripted, "group", strategy="entity")
        assert kept(store, group) == [("城市", "巴黎", None), ("name", "Ana", None)]
        # Read as before: bob's turn stated Paris, the owner's her name.
        assert sent(group) == [["城市", "巴黎", 1, None, "bob"], ["name", "Ana", 2]]
        if said == "turn":
            group.run_turn("我住在罗马。")
        else:
            with Workspace(Settings(provider="scripted", db=str(history.location),
                                    user="ana")) as ws:
                facts.remember(ws, sessions.session_named(ws, "group"), "城市：罗马")
        assert kept(store, group) == [("城市", "巴黎", "bob"), ("name", "Ana", None),
                                      ("城市", "罗马", None)]
        assert [r[0] for r in store.db.execute(ROWS).fetchall()][:2] == [r[0] for r in rows]
