"""Upkeep between turns: the chat folds the history file's write-ahead log every few
turns, once a turn is shown, so that no turn's own commit has to (SQLite would, in
whichever commit found the log 1,000 pages long)."""

from __future__ import annotations

import io
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from registered import open_session
from rich.console import Console

from chatmem.config.settings import Settings
from chatmem.engine.turns import FOLD_EVERY
from chatmem.providers.scripted import ScriptedProvider
from chatmem.repl.loop import Repl
from chatmem.store import Store


def messages_in_the_file_alone(path: Path) -> int:
    """What a copy of the history file without its -wal holds: what has been folded."""
    copy = path.with_name("alone.db")
    shutil.copyfile(path, copy)
    try:
        with sqlite3.connect(copy) as alone:
            return int(alone.execute("SELECT count(*) FROM messages").fetchone()[0])
    finally:
        copy.unlink()


def history_file(tmp_path: Path) -> Path:
    path = tmp_path / "history.db"
    with Store(path):  # created and closed: its schema is in the file itself
        pass
    return path


def test_the_chat_folds_the_log_into_the_file_every_few_turns(tmp_path: Path) -> None:
    path = history_file(tmp_path)
    folded: list[int] = []
    with Store(path) as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "trip",
                              strategy="buffer")

        def typed() -> Iterator[str]:
            # Read before each line: the chat is between two turns.
            for i in range(2 * FOLD_EVERY + 1):
                folded.append(messages_in_the_file_alone(path))
                yield "我们五月去杭州" if i % 2 else f"my order is ORD-{i}"

        Repl(engine, Console(file=io.StringIO()), Console(file=io.StringIO())).run(typed())
    # Each turn stores two messages; they reach the file itself every FOLD_EVERY turns.
    assert folded == [0] * FOLD_EVERY + [2 * FOLD_EVERY] * FOLD_EVERY + [4 * FOLD_EVERY]


def test_a_turn_alone_leaves_the_log_as_sqlite_keeps_it(tmp_path: Path) -> None:
    path = history_file(tmp_path)
    with Store(path) as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "trip",
                              strategy="buffer")
        for i in range(FOLD_EVERY + 1):
            engine.run_turn(f"message {i}")
        # Folding is the front end's to ask for, between turns (engine.between_turns).
        assert messages_in_the_file_alone(path) == 0
        for _ in range(FOLD_EVERY - 1):
            engine.between_turns()
        assert messages_in_the_file_alone(path) == 0
        engine.between_turns()
        assert messages_in_the_file_alone(path) == 2 * (FOLD_EVERY + 1)
