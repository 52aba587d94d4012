"""Writers take the lock up front, and a file that cannot be written fails in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import History
from dialect import set_read_only

from chatmem.engine import Engine
from chatmem.errors import StoreError
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store


def lines(tag: str, count: int) -> str:
    return "".join(
        f"{tag} turn {i}: my order ORD-{1000 + i} costs {i * 3} EUR, "
        f"ships 2026-03-{i % 28 + 1:02d}.\n"
        for i in range(count)
    )


def test_two_chats_writing_one_file_at_once_both_keep_every_turn(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    Store(db).close()  # both processes open an existing file, as two terminals would
    env = {**os.environ, "HOME": str(tmp_path)}
    command = [sys.executable, "-m", "chatmem", "chat", "--db", str(db), "--provider",
               "scripted", "-s", "summary-buffer", "-p", "max_tokens=400"]
    runs = [
        subprocess.Popen([*command[:4], name, *command[4:]], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        for name in ("one", "two")
    ]
    for run, tag in zip(runs, "ab", strict=True):
        assert run.stdin is not None
        run.stdin.write(lines(tag, 60))
        run.stdin.close()
    for run in runs:
        assert run.stderr is not None
        errors = [line for line in run.stderr.read().splitlines() if "error" in line]
        assert run.wait(timeout=120) == 0, errors
        assert errors == []
    with Store(db) as store:
        for name in ("one", "two"):
            session = store.sessions.session(name)
            assert len(store.history.messages(session.id)) == 120
            assert len(store.turns.turns(session.id, status="ok")) == 60
            assert store.memory.summaries(session.id)  # the summarizer's writes got through too


def test_a_file_that_cannot_be_written_fails_before_the_model_is_called(
    make_engine, store: Store, scripted: ScriptedProvider, history: History
) -> None:
    engine = make_engine("summary-buffer", max_tokens=120)
    for n in range(4):
        engine.run_turn(f"my order is ORD-{7731 + n}, shipped to Oslo on 2026-03-0{n + 1}")
    calls = dict(scripted.calls_by_purpose)
    set_read_only(store, True)  # what a read-only file or server does to every write
    # Building a context still works: caching token counts is best effort.
    context = engine.build_context("what is my order?")
    assert "ORD-7734" in str(context.messages())
    # A fresh engine catches up before its first turn: that must not call the model either.
    fresh = Engine(store, engine.session, scripted, engine.strategy)
    with pytest.raises(StoreError) as error:
        fresh.run_turn("what is my order?")
    hint = " (check the file's and its folder's permissions)" if history.is_file else ""
    assert str(error.value) == (
        f"nothing was sent: {store.location} is read-only: nothing can be stored{hint}")
    # Neither the reply nor a summary catch-up reached the model: no call is wasted.
    assert scripted.calls_by_purpose == calls
    set_read_only(store, False)
    assert len(store.history.messages(engine.session.id)) == 8
