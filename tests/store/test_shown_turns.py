"""A recorded turn is checked, and its expansion bounded, only where it is shown: a hand's edit
of the file (or another role's SQL) is one line naming the turn in inspect, never a
traceback nor an expansion without end; running, /retry and export still read it.

Review: a context without its parts (or a count as text) was a traceback in inspect; a run to
position 10**18 expanded for ever; 20,000 runs of the whole history expanded them all."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from cli_runner import RUNNER
from test_contexts import replayed
from test_rendered import chatted

from chatmem.cli import app
from chatmem.errors import StoredTurnNotShown
from chatmem.memory.context import PART_ORDER
from chatmem.store import Store, shown_turns

runner = RUNNER

NOTES = ("reason", "dropped", "warnings", "recall", "recall_columns")
"""Notes about a context, read by their own rules (a kind this version does not know is kept
as text; recall columns out of shape are no notes): their inner values are not varied."""


def _retyped(value: object) -> list[object]:
    """Each way `value` (a stored context, or a part of one) can be written with a key left
    out or a value of another type: what a grantee's SQL or a hand could leave there."""
    out: list[object] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            out.append({k: v for k, v in value.items() if k != key})
            out += [{**value, key: other} for other in ("3", 1.5, True, None, [], {})
                    if type(other) is not type(inner)]
            if key not in NOTES:
                out += [{**value, key: changed} for changed in _retyped(inner)]
    elif isinstance(value, list) and value:
        out += [[changed, *value[1:]] for changed in _retyped(value[0])]
    return out


def _line(name: str, request: int, turn: int, part: str, why: str) -> str:
    return (f"error: session {name!r}, request {request} (turn {turn}): its {part} {why}"
            " (edited by hand, or by another role's SQL?), so it is not shown; `chatmem"
            " sessions export` still reads the messages")


NOT_AS_STORED = "is not stored as chatmem stores it"
TOO_MUCH = "names more of the history than chatmem ever sends"


def _set(db: Path | str, column: str, value: Any, number: int) -> None:
    with Store(db) as store, store.write():
        store.db.execute(f"UPDATE turns SET {column} = ? WHERE number = ?",
                         [json.dumps(value, ensure_ascii=False), number])


def test_a_context_out_of_shape_is_one_line_naming_the_turn(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    [name] = replayed(db, "travel-zh.jsonl", ("window+entity",))
    with Store(db) as store:
        (last,), = store.db.execute("SELECT max(number) FROM turns").fetchall()
        (stored,), = store.db.execute("SELECT context FROM turns WHERE number = ?",
                                      [last]).fetchall()
    stored = json.loads(stored)
    assert {"from", "to"} <= set(stored["parts"][-2]["messages"][0])  # a run of history
    variants = [[], 7, {**stored, "format": 1}, *_retyped(stored)]
    refused = 0
    for variant in variants:
        _set(db, "context", variant, last)
        for args in (["inspect", name, "--request", str(last)], ["inspect", name, "--json"],
                     ["inspect", name, str(last), "-s", "window"], ["sessions", "show", name]):
            result = runner.invoke(app, [*args, "--db", str(db)])
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                variant, args, result.exception)
            if result.exit_code:
                assert args[0] == "inspect", (variant, result.output)  # the session shows
                assert result.exit_code == StoredTurnNotShown.exit_code
                assert result.stderr.strip() == _line(name, last, last, "context",
                                                      NOT_AS_STORED), variant
                refused += "--request" in args
    assert refused > len(variants) / 3
    # Refused only to be shown: the next turn runs on the session as ever (a context of
    # one's own, as a write-share grantee may store on PostgreSQL).
    _set(db, "context", {"score": 1, "note": "a\u0000b 中文"}, last)
    result = runner.invoke(app, ["ask", name, "还在吗", "--provider", "scripted",
                                 "--db", str(db)])
    assert result.exit_code == 0, result.output


def test_runs_past_the_history_or_repeating_it_are_refused_not_expanded(
        tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    with Store(db) as store:
        chatted(store, 3)
        (context, pieces), = store.db.execute(
            "SELECT context, rendered FROM turns WHERE number = 3").fetchall()
        (last,), = store.db.execute("SELECT max(position) FROM messages").fetchall()
    context, pieces = json.loads(context), json.loads(pieces)
    shown = runner.invoke(app, ["inspect", "loc", "--request", "3", "--db", db])
    assert shown.exit_code == 0, shown.output
    history = next(p for p in context["parts"] if p["kind"] == "history")
    run = next(p for p in pieces if isinstance(p, dict))

    def history_of(*runs: dict[str, int]) -> dict[str, Any]:
        parts = [{**p, "messages": list(runs)} if p is history else p
                 for p in context["parts"]]
        return {**context, "parts": parts}

    whole = {"from": 1, "to": last}
    # A hand's run far past the session's last message (200,000 was expanded, one line
    # each; 10**18 never ended), then a grantee's flood: the whole history, 20,000 times.
    for column, value, why in (
            ("context", history_of({"from": 1, "to": 200_000}), NOT_AS_STORED),
            ("rendered", [*pieces[:1], {**run, "to": 200_000}], NOT_AS_STORED),
            ("context", history_of({"from": 1, "to": 10**18}), NOT_AS_STORED),
            ("context", history_of({"from": 1, "to": 1e18}), NOT_AS_STORED),
            ("rendered", [*pieces[:1], {**run, "from": 1, "to": 10**18}], NOT_AS_STORED),
            ("context", history_of(*[whole] * 20_000), TOO_MUCH),
            ("rendered", ["x", *[{**run, **whole}] * 20_000], TOO_MUCH),
            # More of the history than its own context sent.
            ("rendered", [*pieces, *[p for p in pieces if isinstance(p, dict)]], TOO_MUCH)):
        _set(db, column, value, 3)
        started = time.process_time()  # CPU, which a loaded machine does not stretch
        result = runner.invoke(app, ["inspect", "loc", "--request", "3", "--db", db])
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert result.exit_code == StoredTurnNotShown.exit_code, (column, result.output[:300])
        part = "context" if column == "context" else "rendered prompt"
        assert result.stderr.strip() == _line("loc", 3, 3, part, why)
        assert time.process_time() - started < 5
        _set(db, "context", context, 3)
        _set(db, "rendered", pieces, 3)
    # As chatmem wrote it, the turn shows as before; the session's export reads it all.
    assert runner.invoke(app, ["inspect", "loc", "--request", "3", "--db", db]).output == (
        shown.output)
    _set(db, "rendered", ["x", *[{**run, **whole}] * 20_000], 3)
    exported = runner.invoke(app, ["sessions", "export", "loc", "-o",
                                   str(tmp_path / "loc.jsonl"), "--db", db])
    assert exported.exit_code == 0, exported.output


def _chatted_context(tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """A history of three chatted turns, and turn 3's stored context as JSON reads it."""
    db = str(tmp_path / "x.db")
    with Store(db) as store:
        chatted(store, 3)
        (context,), = store.db.execute("SELECT context FROM turns WHERE number = 3").fetchall()
    return db, json.loads(context)


def test_the_store_counts_the_part_kinds_memory_has() -> None:
    assert len(PART_ORDER) == shown_turns.PART_KINDS


def test_a_reason_whose_values_are_not_its_types_is_shown_as_the_text_stored(
        tmp_path: Path) -> None:
    # Review: a reason's kind was checked, its values not: "turns": "x" was an IndexError
    # traceback in inspect, a number a TypeError, 10**30 an OverflowError, and a recall
    # method alone (a Recalled's inner value) one with no wording.
    db, context = _chatted_context(tmp_path)
    history = next(p for p in context["parts"] if p["kind"] == "history")
    for reason in ({"kind": "all_turns", "strategy": "buffer", "turns": "x"},
                   {"kind": "all_turns", "strategy": "buffer", "turns": 2},
                   {"kind": "summary_version", "version": 1, "upto": 10**30, "model": None},
                   {"kind": "facts_selected", "strategy": "entity", "setting": "k", "value": 3,
                    "sent": 1, "total": "全部", "ranked": True},
                   {"kind": "merged", "reasons": [1]},
                   {"kind": "recall_method", "mode": "hybrid", "dense_weight": 0.5,
                    "smooth": 0.5, "sitting": 0.3, "mmr": 0.7}):
        parts = [{**p, "reason": reason} if p is history else p for p in context["parts"]]
        _set(db, "context", {**context, "parts": parts,
                             "dropped": [{"kind": "dropped_turns", "turns": [1, "二"]}]}, 3)
        for args in (["--request", "3"], ["--json"]):
            result = runner.invoke(app, ["inspect", "loc", *args, "--db", db])
            assert result.exit_code == 0, (reason, args, result.exception)
            assert str(reason)[:20] in result.output, (reason, args)


def test_a_warning_whose_values_are_not_its_types_is_shown_as_the_text_stored(
        tmp_path: Path) -> None:
    # Review: {"kind": "over_budget", "tokens": "x"} was a ValueError traceback in inspect.
    db, context = _chatted_context(tmp_path)
    for warning in ({"kind": "over_budget", "tokens": "x", "budget": 10},
                    {"kind": "over_budget", "tokens": [1], "budget": None},
                    {"kind": "summary_behind", "first": 1, "last": "三"}):
        _set(db, "context", {**context, "warnings": [warning]}, 3)
        for args in (["--request", "3"], ["--json"]):
            result = runner.invoke(app, ["inspect", "loc", *args, "--db", db])
            assert result.exit_code == 0, (warning, args, result.exception)


def test_a_note_nested_past_pythons_recursion_is_one_line_naming_the_turn(
        tmp_path: Path) -> None:
    # Review: 600 lists around a reason's run (or a dropped note's, a warning's value) read
    # back as JSON, then wording it was a RecursionError traceback in inspect.
    db, context = _chatted_context(tmp_path)
    history = next(p for p in context["parts"] if p["kind"] == "history")
    deep = json.loads("[" * 600 + "1" + "]" * 600)
    parts = [{**p, "reason": {**p["reason"], "turns": deep}} if p is history else p
             for p in context["parts"]]
    for variant in ({**context, "parts": parts},
                    {**context, "dropped": [{"kind": "dropped_turns", "turns": deep}]},
                    {**context, "warnings": [{"kind": "over_budget", "tokens": deep,
                                              "budget": 10}]}):
        _set(db, "context", variant, 3)
        for args in (["--request", "3"], ["--json"]):
            result = runner.invoke(app, ["inspect", "loc", *args, "--db", db])
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                args, type(result.exception))
            assert result.exit_code == StoredTurnNotShown.exit_code
            assert result.stderr.strip() == _line("loc", 3, 3, "context", NOT_AS_STORED)
    # Nested as chatmem nests, the turn shows.
    _set(db, "context", context, 3)
    assert runner.invoke(app, ["inspect", "loc", "--request", "3", "--db", db]).exit_code == 0


def test_a_message_id_past_the_stores_integers_names_no_message(tmp_path: Path) -> None:
    # Review: an id of 10**30 (a sent message's, or a recall row's) was SQLite's OverflowError
    # traceback in inspect, reading what the message said.
    db, context = _chatted_context(tmp_path)
    said = next(p for p in context["parts"] if p["kind"] == "input")
    parts = [{**p, "messages": [{**p["messages"][0], "id": 10**30}]} if p is said else p
             for p in context["parts"]]
    rows = {"id": [10**30, 2**63], "turn": [1, 1], "role": ["user", "assistant"],
            "tokens": [8, 12], "kept": [False, False], "why": ["no_room", "no_room"]}
    for stored in ({**context, "parts": parts}, {**context, "recall_columns": rows}):
        _set(db, "context", stored, 3)
        for args in (["--request", "3"], ["--json"]):
            result = runner.invoke(app, ["inspect", "loc", *args, "--db", db])
            assert result.exit_code == 0, (args, result.exception)
