"""Turn contexts stored by reference: storage per turn stays O(parts), inspect is unchanged."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cached_counts import cached_counts
from cli_runner import RUNNER

from chatmem.cli import app
from chatmem.memory.context import Context
from chatmem.store import Store, contexts

runner = RUNNER
pytestmark = pytest.mark.usefixtures("hash_embedder")  # about storage, not ranking
SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
STRATEGIES = ("buffer", "summary-buffer+retrieval", "window+entity")
M005 = "m005_indexes_and_contexts_by_reference"
M005_INDEXES = ("facts_session", "facts_source_message", "facts_source_session",
                "turns_user_message",
                "turns_assistant_message")


def replayed(db: Path, sample: str, strategies: tuple[str, ...] = STRATEGIES) -> list[str]:
    """The sample replayed under `strategies` into `db`; the saved session names."""
    args = ["replay", str(SESSIONS / sample), "--save-as", "r", "--provider", "scripted",
            "--db", str(db)]
    for strategy in strategies:
        args += ["-s", strategy]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    with Store(db) as store:
        return [s.name for s in store.sessions.list_sessions()]


def inspect_all(db: Path, names: list[str], step: int) -> dict[tuple[str, int], object]:
    shown: dict[tuple[str, int], object] = {}
    with Store(db) as store:
        counts = {n: len(store.turns.turns(store.sessions.session(n).id)) for n in names}
    for name in names:
        for number in [*range(1, counts[name] + 1, step), counts[name]]:
            result = runner.invoke(app, ["inspect", name, "--turn", str(number), "--json",
                                         "--db", str(db)])
            assert result.exit_code == 0, result.stderr
            shown[(name, number)] = json.loads(result.stdout)
    return shown


def stored_contexts(db: Path) -> list[dict[str, object]]:
    """The contexts as they are in the file (a Store would migrate it first)."""
    conn = sqlite3.connect(db)
    try:
        return [json.loads(r[0]) for r in conn.execute("SELECT context FROM turns")]
    finally:
        conn.close()


def parts_bytes(stored: list[dict[str, object]]) -> int:
    """Bytes of the stored parts (what was sent), not of the notes kept beside them."""
    return sum(len(json.dumps(c["parts"], ensure_ascii=False)) for c in stored)


def write_as_before_m005(db: Path) -> None:
    """Turn the file into one written before m005: full contexts, no m005 indexes."""
    with Store(db) as store, store.write():
        rows = store.db.execute("SELECT id, session_id, tokenizer, context FROM turns").fetchall()
        for turn_id, session_id, tokenizer, context in rows:
            full = contexts.expand(store.db, session_id, tokenizer, json.loads(context))
            store.db.execute("UPDATE turns SET context = ? WHERE id = ?",
                             [json.dumps(full, ensure_ascii=False), turn_id])
        for index in M005_INDEXES:
            store.db.execute(f"DROP INDEX {index}")
        store.db.execute("DELETE FROM _sqlite_migrations WHERE name = ?", [M005])


@pytest.mark.parametrize(("sample", "step"), [("support.jsonl", 3), ("travel-zh.jsonl", 6)])
def test_inspect_json_is_identical_before_and_after_the_migration(
    tmp_path: Path, sample: str, step: int
) -> None:
    db = tmp_path / "history.db"
    names = replayed(db, sample)
    by_reference = inspect_all(db, names, step)
    write_as_before_m005(db)
    full = stored_contexts(db)
    assert not any("format" in c for c in full)
    # The file as chatmem wrote it before m005, read by this chatmem: inspect as before.
    # (Opening it applies m005, so the second reading is of the migrated file.)
    migrated = inspect_all(db, names, step)
    assert migrated == by_reference
    compact = stored_contexts(db)
    # Every stored message is a reference now; only synthesized text is inline.
    inline = [m for c in compact for p in c["parts"] for m in p["messages"] if "role" in m]
    assert inline and all(m["id"] is None for m in inline)
    assert any(c.get("format") == contexts.FORMAT for c in compact)
    assert parts_bytes(compact) < parts_bytes(full) / 2


def test_a_buffer_turns_stored_context_does_not_grow_with_the_history(make_engine) -> None:
    engine = make_engine("buffer")
    for i in range(40):
        engine.run_turn(f"message {i} about ORD-{i}")
    raw = [json.loads(r[0]) for r in engine.store.db.execute(
        "SELECT context FROM turns WHERE session_id = ? ORDER BY number", [engine.session.id])]
    sizes = [len(json.dumps(c)) for c in raw]
    # Every turn after the first sends one run of history plus the input: the same size,
    # give or take the digits of its numbers.
    assert max(sizes[5:]) - min(sizes[5:]) < 40
    history = [p for p in raw[-1]["parts"] if p["kind"] == "history"]
    assert history[0]["messages"] == [{"from": 1, "to": 78}]
    # …and reads back as every message it sent, with its cached count.
    last = engine.store.turns.turn(engine.session.id)
    sent = Context.from_json(last.context).part("history")
    assert sent is not None and len(sent.messages) == 78
    assert [m.content for m in sent.messages][:2] == ["message 0 about ORD-0",
                                                      "echo #1: message 0 about ORD-0"]
    assert all(m.tokens > 0 for m in sent.messages)


def test_a_message_that_differs_from_the_stored_row_stays_inline(store: Store) -> None:
    session = store.sessions.create_session("s", "window")
    [first] = store.history.import_messages(session.id, [{"role": "user", "content": "hello"}])
    context = {"tokens": 20, "parts": [{"kind": "history", "reason": "r", "tokens": 20,
                                         "messages": [
        {"role": "user", "content": "hello", "tokens": 8, "id": first, "turn": 1},
        {"role": "user", "content": "edited", "tokens": 9, "id": first, "turn": 1},
        {"role": "system", "content": "summary", "tokens": 3, "id": None, "turn": None},
    ]}]}
    with store.write():
        stored = contexts.compact(store.db, session.id, "cl100k_base", context)
    assert stored["parts"][0]["messages"][0] == {"from": 1, "to": 1}
    assert stored["parts"][0]["messages"][1]["content"] == "edited"
    assert cached_counts(store, session.id, "cl100k_base") == {first: 8}
    assert contexts.expand(store.db, session.id, "cl100k_base", stored) == context
    # Without a tokenizer, counts cannot be looked up later: everything stays inline.
    assert contexts.compact(store.db, session.id, None, context) == context


def test_recall_notes_are_stored_by_column_and_inspect_reads_both_forms(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    names = [n for n in replayed(db, "support.jsonl") if "retrieval" in n]
    assert names
    by_column = inspect_all(db, names, 1)
    stored = stored_contexts(db)
    noted = [c for c in stored if "recall_columns" in c]
    assert noted and not any("recall" in c for c in stored)
    columns = noted[-1]["recall_columns"]
    assert list(columns)[:4] == ["id", "turn", "role", "bm25"]
    assert len({len(values) for values in columns.values()}) == 1
    # The same notes a row each, as chatmem stored them before: read the same, bigger.
    conn = sqlite3.connect(db)
    with conn:
        for turn_id, context in conn.execute("SELECT id, context FROM turns").fetchall():
            data = json.loads(context)
            if "recall_columns" in data:
                cols = data.pop("recall_columns")
                data["recall"] = [dict(zip(cols, row, strict=True))
                                  for row in zip(*cols.values(), strict=True)]
                conn.execute("UPDATE turns SET context = ? WHERE id = ?",
                             [json.dumps(data, ensure_ascii=False), turn_id])
    conn.close()
    assert inspect_all(db, names, 1) == by_column
    assert any(v.get("context", {}).get("recall") for v in by_column.values())
    assert sum(map(len, map(json.dumps, noted))) < sum(
        len(json.dumps(c)) for c in stored_contexts(db) if "recall" in c) * 0.7


def test_recall_columns_out_of_shape_read_as_no_notes(store: Store) -> None:
    session = store.sessions.create_session("s", "retrieval")
    rows = [{"id": 1, "turn": 1, "kept": True}, {"id": 2, "turn": 2, "kept": False}]
    context = {"tokens": 1, "parts": [], "recall": rows}
    stored = contexts.compact(store.db, session.id, "cl100k_base", context)
    assert stored == {"tokens": 1, "parts": [],
                      "recall_columns": {"id": [1, 2], "turn": [1, 2], "kept": [True, False]}}
    assert contexts.expand(store.db, session.id, "cl100k_base", stored) == context
    # Rows whose keys differ stay rows.
    mixed = {**context, "recall": [rows[0], {"turn": 2, "id": 2, "kept": False}]}
    assert contexts.compact(store.db, session.id, "cl100k_base", mixed) == mixed
    damaged = {**stored, "recall_columns": {"id": [1, 2], "turn": [1]}}
    assert contexts.expand(store.db, session.id, "cl100k_base", damaged)["recall"] == []


def _as_rows(columns: dict[str, object]) -> list[dict[str, object]]:
    """Recall columns as the rows they were, read here by hand."""
    count = next(len(c) for c in columns.values() if isinstance(c, list))
    rows: list[dict[str, object]] = [{} for _ in range(count)]
    for key, column in columns.items():
        if isinstance(column, list):
            for row, value in zip(rows, column, strict=True):
                row[key] = value
        else:
            assert isinstance(column, dict)
            for i, value in zip(column["at"], column["values"], strict=True):
                rows[i][key] = value
    return rows


def test_recall_notes_limited_by_top_k_are_stored_by_column_too(tmp_path: Path) -> None:
    """A TOP_K row's limit (and a routed row's route) is a key the others lack: every turn
    whose top_k left something out stored its notes a row each, each naming its keys."""
    db = tmp_path / "history.db"
    names = replayed(db, "support.jsonl", ("retrieval:top_k=3",))
    by_column = inspect_all(db, names, 1)
    stored = stored_contexts(db)
    noted = [c for c in stored if "recall_columns" in c]
    assert noted and not any("recall" in c for c in stored)
    partial = [c["recall_columns"]["top_k"] for c in noted  # type: ignore[index]
               if isinstance(c["recall_columns"].get("top_k"), dict)]  # type: ignore[union-attr]
    assert partial and all(set(p["values"]) == {3} for p in partial)
    conn = sqlite3.connect(db)
    with conn:
        for turn_id, context in conn.execute("SELECT id, context FROM turns").fetchall():
            data = json.loads(context)
            if "recall_columns" in data:
                data["recall"] = _as_rows(data.pop("recall_columns"))
                conn.execute("UPDATE turns SET context = ? WHERE id = ?",
                             [json.dumps(data, ensure_ascii=False), turn_id])
    conn.close()
    assert inspect_all(db, names, 1) == by_column
    assert any("top_k=3 reached" in json.dumps(v, ensure_ascii=False)
               for v in by_column.values())


def test_partial_recall_columns_read_back_or_as_no_notes(store: Store) -> None:
    session = store.sessions.create_session("s", "retrieval")
    rows = [{"id": 1, "kept": True, "route": "exact"}, {"id": 2, "kept": False},
            {"id": 3, "kept": False, "top_k": 3}]
    context = {"tokens": 1, "parts": [], "recall": rows}
    stored = contexts.compact(store.db, session.id, "cl100k_base", context)
    assert stored["recall_columns"] == {
        "id": [1, 2, 3], "kept": [True, False, False],
        "route": {"at": [0], "values": ["exact"]}, "top_k": {"at": [2], "values": [3]}}
    expanded = contexts.expand(store.db, session.id, "cl100k_base", stored)
    assert expanded == context
    assert [list(r) for r in expanded["recall"]] == [list(r) for r in rows]
    # Keys in another order than another row's, or none shared: stay rows.
    for odd in ({"kept": False, "id": 2}, {"why": "no_room"}):
        mixed = {**context, "recall": [rows[0], odd]}
        assert contexts.compact(store.db, session.id, "cl100k_base", mixed) == mixed
    for at in ([3], [0, 0], ["0"]):
        damaged = {**stored, "recall_columns": {**stored["recall_columns"],
                                                "top_k": {"at": at, "values": [3] * len(at)}}}
        assert contexts.expand(store.db, session.id, "cl100k_base", damaged)["recall"] == []
