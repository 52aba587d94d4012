"""An imported transcript's facts sit beside the profile's in its session, never over them
(README: "not from history you import or fork, whose "user" may be anyone, … beside the
profile's, never over them")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import invoke, repl, run
from pg import Team
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import FactScope, Store


def _sent(db: Path, session: str, text: str) -> str:
    with Store(db) as store:
        engine = open_session(store, Settings(user_facts=True), ScriptedProvider(), session,
                              strategy="entity")
        return json.dumps(engine.build_context(text).messages(), ensure_ascii=False)


def _facts(db: Path) -> set[tuple[str, str, FactScope]]:
    with Store(db) as store:
        return {(f.key, f.value, f.scope)
                for f in store.facts.facts(user=None, session_id=None)} | {
            (f.key, f.value, f.scope) for s in store.sessions.list_sessions()
            for f in store.facts.facts(user=None, session_id=s.id)}


@pytest.mark.parametrize("words", [
    ("My name is Ana.", "My name is Mallory.", "My name is Annie.", "name",
     "Ana", "Mallory", "Annie"),
    ("我叫安娜。", "我叫小明。", "我叫安妮。", "名字", "安娜", "小明", "安妮"),
])
def test_an_imported_turns_value_does_not_hide_the_profiles(
        tmp_path: Path, words: tuple[str, ...]) -> None:
    """An imported support log's "My name is Mallory." became the session's own value of
    `name`, which hid the profile's: in that session the model was sent only
    `[n,"name","Mallory",1]` as what the user stated, not the importer's own name. Both
    are sent; and what the user says there herself is her profile's, not the log's row."""
    mine, theirs, again, key, her_value, their_value, her_new = words
    db = tmp_path / "x.db"
    repl(db, "mine", [mine], user_facts=True)
    log = tmp_path / "support.jsonl"
    log.write_text(json.dumps({"role": "user", "content": theirs}, ensure_ascii=False)
                   + '\n{"role": "assistant", "content": "Noted."}\n', encoding="utf-8")
    assert invoke("sessions", "import", str(log), "theirs", "--no-index",
                  "--db", str(db)).exit_code == 0
    repl(db, "theirs", ["hello"], user_facts=True)
    assert (key, their_value, FactScope.SESSION) in _facts(db)
    sent = _sent(db, "theirs", "who am I?")
    assert her_value in sent and their_value in sent
    repl(db, "theirs", [again], user_facts=True)
    facts = _facts(db)
    assert (key, her_new, FactScope.USER) in facts
    assert (key, their_value, FactScope.SESSION) in facts
    assert her_value not in [v for k, v, _ in facts if k == key]


@pytest.mark.parametrize("words", [
    ("My name is Ann.", "My name is Mallory.", "name", "Ann", "Mallory"),
    ("我叫安娜。", "我叫小明。", "名字", "安娜", "小明"),
])
def test_an_imported_turns_value_sits_beside_the_profiles_on_postgresql(
        team: Team, tmp_path: Path, words: tuple[str, ...]) -> None:
    mine, theirs, key, her_value, their_value = words
    config = tmp_path / "config.toml"
    config.write_text('provider = "scripted"\nuser_facts = true\n', encoding="utf-8")
    ann, c = team.url("ann"), ("--config", str(config))
    run(ann, "ask", "mine", mine, "--strategy", "entity", "--save", *c, code=0)
    log = tmp_path / "support.jsonl"
    log.write_text(json.dumps({"role": "user", "content": theirs}, ensure_ascii=False)
                   + "\n", encoding="utf-8")
    run(ann, "sessions", "import", str(log), "theirs", "--no-index", code=0)
    run(ann, "ask", "theirs", "hello", "--strategy", "entity", "--save", *c, code=0)
    shown = json.loads(run(ann, "inspect", "theirs", "--next", "who am I?", "--json", *c,
                           code=0).stdout)
    (block,) = [m["content"] for p in shown["context"]["parts"] if p["kind"] == "facts"
                for m in p["messages"]]
    sent = [json.loads(line)[1:3] for line in block.split("\n")[2:-1]]
    assert [key, her_value] in sent and [key, their_value] in sent
