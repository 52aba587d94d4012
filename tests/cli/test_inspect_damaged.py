"""`chatmem inspect` of a turn row chatmem did not write (a write-share grantee's SQL, a file
edited by hand): one line naming the turn and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem.errors import StoreError
from chatmem.store import Store

SUPPORT = str(Path(__file__).resolve().parents[2] / "sessions" / "support.jsonl")


@pytest.fixture
def db(tmp_path: Path) -> str:
    db = str(tmp_path / "x.db")
    result = invoke("replay", SUPPORT, "-s", "window:k=2", "--save-as", "rs",
                    "--provider", "scripted", "--db", db)
    assert result.exit_code == 0, result.stderr
    return db


def added_turn(db: str, context: str, rendered: str | None = None) -> int:
    """A failed turn added by SQL, as a grantee adds one to a shared session; its number."""
    with Store(db) as store, store.write():
        (session_id, last), = store.db.execute(
            "SELECT session_id, max(number) FROM turns GROUP BY session_id").fetchall()
        store.db.execute("INSERT INTO turns (session_id, number, status, input, context, params,"
                         " strategy, rendered, created_at) VALUES (?, ?, 'failed', 'x', ?, '{}',"
                         " 'buffer', ?, '2026-01-02T03:04:05+00:00')",
                         [session_id, last + 1, context, rendered])
    return int(last) + 1


def refused(db: str, *args: str) -> str:
    result = invoke(*args, "--db", db)
    assert result.exit_code == StoreError.exit_code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    [line] = result.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize("context", ["{}", '{"parts": {}}', '{"parts": [{"kind": "input"}]}',
                                     '{"parts": [{"kind": "input", "reason": "r", "messages":'
                                     ' [{"role": "user", "content": "x", "tokens": "3"}]}]}'])
def test_a_context_without_its_parts_is_one_line_naming_the_turn(db: str, context: str) -> None:
    number = added_turn(db, context)
    for args in (("inspect", "rs", str(number)), ("inspect", "rs", "--request", str(number))):
        assert refused(db, *args) == (
            f"error: turn {number}: context is not stored as chatmem stores it (was it edited"
            " by hand?); `chatmem sessions export` still reads the messages")
    assert invoke("inspect", "rs", "2", "--db", db).exit_code == 0


def test_a_run_sent_once_read_20000_times_is_one_line_naming_the_turn(db: str) -> None:
    with Store(db) as store:  # the last turn's context: it sent the window's messages
        (context,), = store.db.execute(
            "SELECT context FROM turns ORDER BY number DESC LIMIT 1").fetchall()
        (last,), = store.db.execute("SELECT max(position) FROM messages").fetchall()
    forged = json.dumps(["x", *[{"from": 1, "to": last, "gaps": {}}] * 20_000])
    number = added_turn(db, context, forged)
    assert refused(db, "inspect", "rs", "--request", str(number)) == (
        f"error: turn {number}: rendered prompt is not stored as chatmem stores it (was it"
        " edited by hand?); `chatmem sessions export` still reads the messages")
