"""`chatmem facts list|forget`, and the REPL's /facts, /remember and /forget."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from chatmem.cli import app
from chatmem.config import Settings
from chatmem.engine import open_session
from chatmem.providers.scripted import ScriptedProvider
from chatmem.repl import Repl
from chatmem.store import Store

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def chat(db: Path, session: str, lines: list[str], *, user: str = "default",
         strategy: str = "entity") -> tuple[str, str]:
    """Drive the REPL over a real store; returns (stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with Store(db) as store:
        engine = open_session(store, Settings(system="Be brief.", user=user),
                              ScriptedProvider(), session, strategy=strategy)
        Repl(engine, Console(file=out, width=200), Console(file=err, width=200)).run(lines)
    return out.getvalue(), err.getvalue()


def facts_json(db: Path, *args: str) -> list[dict]:
    result = run("facts", "list", "--db", str(db), "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_list_filters_by_user_and_session(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    chat(db, "trip", ["My name is Alice.", "My order id is ORD-7731."], user="alice")
    chat(db, "work", ["My name is Bob.", "My desk is 4B."], user="bob")
    everything = facts_json(db)
    assert [(f["key"], f["value"], f["scope"], f["owner"], f["source"]) for f in everything] == [
        ("name", "Alice", "user", "user alice", "turn 1"),
        ("order id", "ORD-7731", "session", "session trip", "turn 2"),
        ("name", "Bob", "user", "user bob", "turn 1"),
        ("desk", "4B", "session", "session work", "turn 2"),
    ]
    assert [f["value"] for f in facts_json(db, "--user", "bob")] == ["Bob"]
    assert [f["value"] for f in facts_json(db, "--session", "trip")] == ["Alice", "ORD-7731"]
    table = run("facts", "list", "--db", str(db), "--session", "work")
    assert table.exit_code == 0
    assert "desk" in table.stdout and "4B" in table.stdout and "Alice" not in table.stdout


def test_list_of_an_unknown_session_is_an_error(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    result = run("facts", "list", "--db", str(db), "--session", "nope")
    assert result.exit_code == 1
    assert result.stderr == f"error: no session named 'nope' in {db}\n"


def test_forget_by_key_or_id_and_its_errors(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    chat(db, "a", ["My name is Alice."], user="alice")
    chat(db, "b", ["My name is Bob."], user="bob")
    ambiguous = run("facts", "forget", "name", "--db", str(db))
    assert ambiguous.exit_code == 2
    assert ambiguous.stderr == (
        "error: key 'name' names 2 facts (ids 1, 2); give an id, --user or --session\n")
    missing = run("facts", "forget", "77", "--db", str(db))
    assert missing.exit_code == 1
    assert missing.stderr == "error: no fact '77'; `chatmem facts list` shows ids and keys\n"
    done = run("facts", "forget", "name", "--user", "bob", "--db", str(db))
    assert done.exit_code == 0 and done.stderr == "forgot fact 2: name (user bob)\n"
    assert [f["value"] for f in facts_json(db)] == ["Alice"]
    again = run("facts", "forget", "2", "--db", str(db))
    assert again.exit_code == 1


def test_repl_remember_facts_and_forget(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    out, err = chat(db, "a", [
        "/remember budget: 5000 EUR",
        "/remember --session 预算：五千元",
        "/remember I am allergic to peanuts",
        "/remember just a thought",
        "/facts",
    ])
    assert err == ""
    assert "remembered fact 1: budget = 5000 EUR (user)" in out
    assert "remembered fact 2: 预算 = 五千元 (session)" in out
    assert "remembered fact 3: allergy = peanuts (user)" in out
    assert "remembered fact 4: note 1 = just a thought (user)" in out
    table = out[out.index("┏"):]
    for cell in ("budget", "5000 EUR", "预算", "五千元", "/remember", "session a", "user default"):
        assert cell in table
    out, err = chat(db, "a", ["/forget budget", "/forget 2", "/forget nope", "/forget"])
    assert "forgot fact 1: budget" in out and "forgot fact 2: 预算" in out
    assert err.splitlines() == [
        "error: no fact 'nope' in this session; /facts lists them",
        "error: usage: /forget ID|KEY, e.g. /forget order id (see /facts)",
    ]
    with Store(db) as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "a")
        sent = json.dumps(engine.build_context("hi").to_json(), ensure_ascii=False)
    assert "5000 EUR" not in sent and "五千元" not in sent and "peanuts" in sent


def test_remember_without_text_is_a_usage_error(tmp_path: Path) -> None:
    _, err = chat(tmp_path / "x.db", "a", ["/remember --session"])
    assert err == "error: usage: /remember [--session] TEXT, e.g. /remember budget: 5000 EUR\n"


def test_purge_leaves_no_trace_in_the_database_file(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    secret = "zebra-4242-秘密"
    _, err = chat(db, "a", [f"/remember locker code: {secret}", "hello", "what is new?",
                            "/forget locker code", "and now?"])
    assert err == ""
    with Store(db) as store:
        (_, turn2, turn3) = store.turns(store.session("a").id)
        assert secret in json.dumps(turn2.context, ensure_ascii=False)
        assert secret not in json.dumps(turn3.context, ensure_ascii=False)
    assert secret.encode() in _file_bytes(db)
    result = run("facts", "forget", "locker code", "--purge", "--db", str(db))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == "erased fact 1: locker code (user default)\n"
    assert secret.encode() not in _file_bytes(db)
    assert facts_json(db) == []
    with Store(db) as store:
        assert len(store.turns(store.session("a").id)) == 3


def _file_bytes(db: Path) -> bytes:
    """The database file and any WAL or journal next to it."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))
