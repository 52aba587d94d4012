"""`chatmem sessions rename` and `chatmem sessions fork`: output, database effect, errors."""

from __future__ import annotations

import json
import sqlite3
from functools import partial
from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem.store import Store

LINES = "my order is ORD-7731\n我们五月去杭州旅行\nwhat did I order?\n"


run = partial(invoke, width=200)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "x.db"
    result = run("chat", "trip", "--db", str(path), "--provider", "scripted",
                 "--strategy", "summary", "--system", "Answer briefly.", input=LINES)
    assert result.exit_code == 0, result.stderr
    result = run("chat", "other", "--db", str(path), "--provider", "scripted", input="hi\n")
    assert result.exit_code == 0, result.stderr
    return path


def rows(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("sessions", "messages", "summaries", "strategy_state", "facts")}
    finally:
        conn.close()


def test_rename(db: Path) -> None:
    with Store(db) as store:
        before = store.sessions.session("trip")
    result = run("sessions", "rename", "trip", "旅行", "--db", str(db))
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "renamed session trip → 旅行\n"
    with Store(db) as store:
        after = store.sessions.session("旅行")
        assert store.sessions.find_session("trip") is None
        assert after.id == before.id and len(store.history.messages(after.id)) == 6
    shown = run("sessions", "show", "旅行", "--db", str(db), "--json")
    assert json.loads(shown.stdout)["name"] == "旅行"


@pytest.mark.parametrize(("args", "code", "message"), [
    # A missing session is "not found" (1), as in every other command; bad names are usage (2).
    (["nope", "x"], 1,
     "error: no session named 'nope' in {db} (`chatmem sessions list` lists them)"),
    (["trip", "other"], 2, "error: a session named 'other' already exists"),
    (["trip", " "], 2, "error: a session name cannot be empty"),
])
def test_rename_errors_write_nothing(db: Path, args: list[str], code: int, message: str) -> None:
    before = rows(db)
    result = run("sessions", "rename", *args, "--db", str(db))
    assert result.exit_code == code
    assert result.stderr == message.format(db=db) + "\n"
    assert rows(db) == before


def test_fork_all_turns(db: Path) -> None:
    result = run("sessions", "fork", "trip", "trip-b", "--db", str(db))
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.splitlines() == [
        "forked session trip → trip-b with all 3 turns: 6 messages copied",
        "derived state copied: summary (3 summary versions, up to turn 3)",
        "turn records (what was sent) stay with trip",
    ]
    with Store(db) as store:
        source, fork = store.sessions.session("trip"), store.sessions.session("trip-b")
        assert (fork.strategy, fork.system) == ("summary", "Answer briefly.")
        assert [(m.turn, m.role, m.content) for m in store.history.messages(fork.id)] == [
            (m.turn, m.role, m.content) for m in store.history.messages(source.id)]
        assert [s.text for s in store.memory.summaries(fork.id)] == [
            s.text for s in store.memory.summaries(source.id)]


def test_fork_at_turn_says_what_is_rebuilt(db: Path) -> None:
    result = run("sessions", "fork", "trip", "early", "--at-turn", "1", "--db", str(db))
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        "forked session trip → early at turn 1 of 3: 2 messages copied",
        "derived state rebuilt from the copied turns before early's next turn "
        "(it covers turns after 1): "
        "summary (3 summary versions, up to turn 3)",
        "turn records (what was sent) stay with trip",
    ]
    with Store(db) as store:
        fork = store.sessions.session("early")
        assert [m.content for m in store.history.messages(fork.id)] == [
            "my order is ORD-7731", "echo #1: my order is ORD-7731"]
        assert store.memory.summaries(fork.id) == []
    # The fork's next turn first catches up on its own history only, so that
    # turn is already sent with a summary; then the turn itself is folded in.
    chat = run("chat", "early", "--db", str(db), "--provider", "scripted", input="and then?\n")
    assert chat.exit_code == 0, chat.stderr
    with Store(db) as store:
        fork = store.sessions.session("early")
        ids = [m.id for m in store.history.messages(fork.id)]
        assert [(s.version, s.covered_ids) for s in store.memory.summaries(fork.id)] == [
            (1, ids[:2]), (2, ids[2:4])]
        text = store.memory.summaries(fork.id)[0].text
        sent = store.turns.turn(fork.id).context
    assert "ORD-7731" in text and "杭州" not in text
    assert [p["kind"] for p in sent["parts"]][:2] == ["system", "summary"]


def test_fork_json(db: Path) -> None:
    result = run("sessions", "fork", "trip", "分支", "--at-turn", "2", "--db", str(db), "--json")
    assert result.exit_code == 0 and result.stderr == ""
    assert json.loads(result.stdout) == {
        "source": "trip", "name": "分支", "at_turn": 2, "source_turns": 3, "messages": 4,
        "copied": [],
        "rebuilt": [{"owner": "summary", "covers_turn": 3, "summaries": 3, "facts": 0}],
        "stated_facts": 0,
    }
    assert "分支" in result.stdout  # Chinese stays readable


@pytest.mark.parametrize(("args", "code", "message"), [
    (["nope", "x"], 1,
     "error: no session named 'nope' in {db} (`chatmem sessions list` lists them)"),
    (["trip", "other"], 2, "error: a session named 'other' already exists"),
    (["trip", "x", "--at-turn", "4"], 2,
     "error: session 'trip' has 3 turns; it can be forked at turns 0–3, not at turn 4"),
    (["trip", "x", "--at-turn", "-1"], 2,
     "error: session 'trip' has 3 turns; it can be forked at turns 0–3, not at turn -1"),
])
def test_fork_errors_write_nothing(db: Path, args: list[str], code: int, message: str) -> None:
    before = rows(db)
    result = run("sessions", "fork", *args, "--db", str(db))
    assert result.exit_code == code
    assert result.stderr == message.format(db=db) + "\n"
    assert result.stdout == ""
    assert rows(db) == before


@pytest.mark.parametrize("command", [["rename", "a", "b"], ["fork", "a", "b"]])
def test_a_missing_history_file_is_not_created(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "nowhere" / "x.db"
    result = run("sessions", *command, "--db", str(path))
    assert result.exit_code == 1  # as for list, show and delete
    assert result.stderr.startswith(f"error: no history file at {path}")
    assert not path.exists() and not path.parent.exists()


def test_help_has_an_example() -> None:
    for command in ("rename", "fork"):
        result = run("sessions", command, "--help")
        assert result.exit_code == 0
        assert "Example: chatmem sessions " + command in result.stdout


def test_fork_reports_facts_and_stated_facts(tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    result = run("chat", "facts", "--db", str(db), "--provider", "scripted", "-s", "entity",
                 input="/remember locker: B12\nmy order is ORD-7731\n"
                       "我们的预算是五千元\nI live in Lisbon\n")
    assert result.exit_code == 0, result.stderr
    full = run("sessions", "fork", "facts", "f2", "--db", str(db))
    assert full.stderr.splitlines()[1:3] == [
        "derived state copied: facts (3 facts, up to turn 3)",
        "copied 1 fact stated with /remember",
    ]
    early = run("sessions", "fork", "facts", "f1", "--at-turn", "1", "--db", str(db))
    assert early.stderr.splitlines()[1:3] == [
        "derived state rebuilt from the copied turns before f1's next turn "
        "(it covers turns after 1): "
        "facts (3 facts, up to turn 3)",
        "copied 1 fact stated with /remember",
    ]
    with Store(db) as store:
        def facts(name: str) -> dict[str, str]:
            session_id = store.sessions.session(name).id
            return {f.key: f.value for f in store.facts.facts(session_id=session_id)}

        assert facts("f2") == facts("facts") and len(facts("f2")) == 4
        assert facts("f1") == {"locker": "B12"}


def test_a_session_of_one_turn_is_said_in_the_singular(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    assert run("chat", "分支", "--db", str(db), "--provider", "scripted",
               input="你好\n").exit_code == 0
    result = run("sessions", "fork", "分支", "分支2", "--at-turn", "99", "--db", str(db))
    assert result.exit_code == 2
    assert result.stderr == ("error: session '分支' has 1 turn; it can be forked at turns 0–1, "
                             "not at turn 99\n")


def test_a_fork_rebuilding_its_facts_keeps_a_later_remember_and_forgetting(tmp_path: Path) -> None:
    """The fork's extractor reads turns 1-2 again; /remember said Lyon after them and the
    name was forgotten after them (it turned Lyon back into Paris and brought Ada back)."""
    db = str(tmp_path / "r.db")
    run("chat", "f2", "--db", db, "--provider", "scripted", "-s", "entity",
        input="I live in Paris.\nMy name is Ada.\n/remember city: Lyon\nok\n", code=0)
    run("facts", "forget", "name", "--db", db, code=0)
    run("sessions", "fork", "f2", "f2b", "--at-turn", "2", "--db", db, code=0)
    run("chat", "f2b", "--db", db, "--provider", "scripted", input="hello again\n", code=0)
    with Store(db) as store:
        fork = store.sessions.session("f2b").id
        assert {f.key: f.value for f in store.facts.facts(session_id=fork)} == {"city": "Lyon"}
