"""Running a chat reads its session's last turn (the toolbar's usage as a chat starts, the turn
/retry and /edit-last replace) without expanding that turn's context or rendered prompt: a
context out of shape (a hand's edit of the file, or a write-share grantee's turn of his own,
which p018 lets him store) no longer stops the owner's `ask`, and a flood of runs there is
not expanded each time a chat starts.

Review: `{"format": 2}` in the last turn was a KeyError traceback in `ask`, `"parts": "3"` a
TypeError; a grantee's 20,000 runs of the whole history were expanded by every chat's start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_runner import chat, run
from meter import Meter, metered
from pg import NOW, Team
from test_rendered import chatted

from chatmem.memory.quoting import attached_block
from chatmem.render import make_console
from chatmem.repl.loop import Repl
from chatmem.store import Store, TurnStatus

DAMAGED: tuple[Any, ...] = (
    {"format": 2},
    {"format": 2, "parts": "3"},
    {"format": 2, "parts": [3, {"kind": "history", "reason": "x", "messages": "3"}]},
    {"format": 2, "parts": [{"kind": "history", "reason": "x",
                             "messages": [{"from": "1", "to": 2}, {"to": 3}, 7, None]}]},
    {"format": 2, "budget": "lots", "approximate": "yes",
     "parts": [{"kind": "files", "reason": "x", "messages": [{"role": 1, "content": None}]}]},
    {"format": 1, "parts": [{"kind": "history"}]},
    # A file's block with its image named otherwise than by an object: /retry sends nothing.
    {"format": 2, "parts": [{"kind": "files", "reason": "x", "messages": [
        {"role": "user", "content": attached_block("图.png", "一张图"), "image": "x"}]}]},
)
"""Contexts chatmem never writes, each an object (all a grantee's SQL is held to)."""


def _last(db: str) -> tuple[int, str]:
    with Store(db) as store:
        (number, status), = store.db.execute(
            "SELECT number, status FROM turns ORDER BY number DESC LIMIT 1").fetchall()
    return int(number), str(status)


def _set_last(db: str, context: Any, pieces: Any = None) -> None:
    with Store(db) as store, store.write():
        store.db.execute(
            "UPDATE turns SET context = ?, rendered = coalesce(?, rendered)"
            " WHERE number = (SELECT max(number) FROM turns)",
            [json.dumps(context, ensure_ascii=False),
             None if pieces is None else json.dumps(pieces)])


def test_a_damaged_last_turn_leaves_ask_and_retry_running(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    with Store(db) as store:
        chatted(store, 3)
    for context in (*DAMAGED, [], 7):
        _set_last(db, context)
        number, _ = _last(db)
        result = run(db, "ask", "loc", "还在吗？ still there?", "--provider", "scripted")
        assert result.exit_code == 0, (context, result.output)
        assert _last(db) == (number + 1, TurnStatus.OK), context
        # /retry replaces the turn it reads as the chat starts, damaged or not.
        _set_last(db, context)
        result = chat(db, "loc", ["/retry"])
        assert result.exit_code == 0, (context, result.output)
        assert "regenerating turn" in result.stderr, (context, result.stderr)
        assert _last(db) == (number + 2, TurnStatus.OK), context


def _starting(store: Store, engine: Any) -> Meter:
    """What a chat's start and a /retry's check read of the session's turns."""
    with metered(store) as meter:
        Repl(engine, make_console(), make_console(stderr=True))
        store.turns.replaceable_turn(engine.session.id)
    return meter


def test_a_flood_in_the_last_turn_is_not_expanded_when_a_chat_starts(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store:
        engine = chatted(store, 3)
        (context, pieces), = store.db.execute(
            "SELECT context, rendered FROM turns WHERE number = 3").fetchall()
        (last,), = store.db.execute("SELECT max(position) FROM messages").fetchall()
        context, pieces = json.loads(context), json.loads(pieces)
        run = next(p for p in pieces if isinstance(p, dict))
        whole = {"from": 1, "to": last}
        read = {}
        for runs in (20, 200_000):
            parts = [{**p, "messages": [whole] * runs} if p["kind"] == "history" else p
                     for p in context["parts"]]
            with store.write():
                store.db.execute("UPDATE turns SET context = ?, rendered = ? WHERE number = 3",
                                 [json.dumps({**context, "parts": parts}),
                                  json.dumps(["x", *[{**run, **whole}] * runs])])
            read[runs] = _starting(store, engine)
        # The same statements and rows whatever the turn names (each of its runs was a
        # statement, and each named message a row).
        assert (read[20].statements, read[20].rows) == (
            read[200_000].statements, read[200_000].rows), read


def _grantees_turn(team: Team, context: Any) -> None:
    """A failed turn of bob's own, last in ann's `proj`, with `context`."""
    (session_id, number), = team.rows("SELECT session_id, max(number) FROM turns"
                                      " GROUP BY session_id")
    with team.server.driver.connect(team.url("bob"), autocommit=True) as conn:
        conn.execute("INSERT INTO turns (session_id, number, status, input, context, params,"
                     " strategy, created_at) VALUES (%s, %s, 'failed', 'bob 的问题', %s,"
                     " '{}', 'buffer', %s)",
                     [session_id, number + 1, json.dumps(context, ensure_ascii=False), NOW])


def test_a_grantees_turn_out_of_shape_or_flooding_leaves_the_owner_running(
        team: Team) -> None:
    ann = team.url("ann")
    run(ann, "ask", "proj", "hello 你好", "--provider", "scripted", code=0)
    run(ann, "ask", "proj", "第二轮", "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    (last,), = team.rows("SELECT max(position) FROM messages")
    flood = {"format": 2, "parts": [{"kind": "history", "reason": "x",
                                     "messages": [{"from": 1, "to": last}] * 20_000}]}
    for context in (*DAMAGED, flood):
        _grantees_turn(team, context)
        (before,), = team.rows("SELECT max(number) FROM turns")
        result = run(ann, "ask", "proj", "还在吗？", "--provider", "scripted")
        assert result.exit_code == 0, (context, result.output)
        assert team.rows("SELECT number, status FROM turns ORDER BY number DESC LIMIT 1") == [
            (before + 1, "ok")], context
        # Her chat resumes after his turn, and /retry sends its input again.
        _grantees_turn(team, context)
        result = chat(ann, "proj", ["/retry"])
        assert result.exit_code == 0, (context, result.output)
        assert team.rows("SELECT input, status FROM turns ORDER BY number DESC LIMIT 1") == [
            ("bob 的问题", "ok")], context
