"""`sessions reset-state` of chatmem's own notes, which no strategy builds again from the
first turn: the secret guard's list of turns that said something sensitive, and the pin id
counter. Both are made again at once, from every turn and every summary version."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_runner import run

from chatmem.app.state_reset import reset_state
from chatmem.app.workspace import Workspace
from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.memory import pins
from chatmem.memory.pins import COUNTER
from chatmem.memory.sensitive_turns import SENSITIVE_KEY
from chatmem.providers.scripted import RULES
from chatmem.providers.scripted_summary import extractive_summary
from chatmem.store import Store

FILL = "about Annabel and the blue car and a longer sentence to fill the budget quickly"


def broken(db: Path, strategy: str, key: str) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute("UPDATE strategy_state SET value = '{bad' WHERE strategy = ?"
                            " AND key = ?", (strategy, key)).rowcount == 1


def state(db: Path, strategy: str) -> dict[str, object]:
    with Store(db) as store:
        session = store.sessions.session("sens")
        return {k: v for k, v in store.memory.strategy_state(session.id, strategy).items()
                if not k.startswith("@")}


def summaries(db: Path) -> str:
    with Store(db) as store:
        return "\n".join(s.text for s in store.memory.summaries(store.sessions.session("sens").id))


def test_resetting_the_guards_notes_keeps_an_early_secret_out_of_every_summary(
        tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    run(db, "ask", "sens", "my password is hunter2-Zebra-77, keep it safe", "-s",
        "summary-buffer", "-p", "max_tokens=80", "--provider", "scripted", code=0)
    for i in range(5):
        run(db, "ask", "sens", f"message {i} {FILL}", "--provider", "scripted", code=0)
    said = state(db, SENSITIVE_KEY)
    assert said == {"turns": [1]}
    broken(db, SENSITIVE_KEY, "turns")
    # The turn is answered; its memory update waits on the row.
    failed = run(db, "ask", "sens", "ok so it was hunter2-Zebra-77 right", "--provider",
                 "scripted", code=0)
    assert "reset-state sens sensitive" in failed.stderr
    done = run(db, "sessions", "reset-state", "sens", "sensitive", code=0)
    assert "built again from every turn now" in done.stderr
    assert state(db, SENSITIVE_KEY) == {"turns": [1, 7]}  # the new mention too
    for text in ("ok so it was hunter2-Zebra-77 right", "one more", f"last {FILL}"):
        run(db, "ask", "sens", text, "--provider", "scripted", code=0)
    text = summaries(db)
    assert "hunter2-Zebra-77" not in text and "⟦password⟧" in text


def test_resetting_the_pin_counter_never_gives_an_unpinned_id_again(
        store: Store, make_engine: Callable[..., Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A summarizer that loses the two details, so the drift guard pins them (p1, p2).
    monkeypatch.setitem(RULES, "summary", lambda m: extractive_summary(m)
                        .replace("五千元", "一笔预算").replace("ORD-7731", "the order"))
    engine = make_engine("summary")
    engine.run_turn("My order is ORD-7731.")
    engine.run_turn("我们的预算是五千元。")
    held = pins.pinned_facts(store.memory, engine.session.id)
    assert [p.ref for p in held] == ["p1", "p2"]
    pins.unpin(store, held[1])
    with Workspace.around(Settings(provider="scripted"), store) as ws:
        done = reset_state(ws, engine.session.name, COUNTER)
    assert (done.rows, done.summaries, done.rebuilt) == (1, 0, True)
    # The last id given out was 2 (unpinned since): the next pin is p3, never a second p2.
    assert pins.allocate_ids(store, engine.session.id, 1) == [3]


@pytest.mark.parametrize(("named", "way"), [
    ("summary-buffer:max_tokens=80", "summary-buffer"),  # parameters, as -s takes them
    ("summary-buffer+window", "summary-buffer"),  # a combination: each part's own state
])
def test_resetting_a_state_named_as_s_names_a_strategy_says_the_name_to_give(
        tmp_path: Path, named: str, way: str) -> None:
    """`sessions reset-state S notes:k=1` said only that no state of 'notes:k=1' was held
    and that the error that led here names the strategy."""
    db = tmp_path / "h.db"
    run(db, "ask", "s", f"hello {FILL}", "-s", "summary-buffer", "-p", "max_tokens=80",
        "--save", "--provider", "scripted", code=0)
    refused = run(db, "sessions", "reset-state", "s", named, code=1)
    assert f", {way})" in refused.stderr or f"e.g. {way})" in refused.stderr
    assert "led here" not in refused.stderr
    run(db, "sessions", "reset-state", "s", way, code=0)
