"""Upkeep between turns: once a turn is shown, the chat merges a little of the word index
and folds the history file's write-ahead log every few turns, so that no turn's own
commit has to (SQLite would merge in whichever commit found four segments on a level,
and fold in whichever found the log 1,000 pages long)."""

from __future__ import annotations

import io
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from meter import metered
from registered import open_session
from rich.console import Console

from chatmem.config.settings import Settings
from chatmem.engine.upkeep import FOLD_EVERY
from chatmem.providers.scripted import ScriptedProvider
from chatmem.repl.loop import Repl
from chatmem.store import Store
from chatmem.store.sqlite_backend import BUSY_TIMEOUT_MS


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


def index_writes_per_turn(store: Store, turns: int, *, between: bool) -> tuple[list[int], int]:
    """The full-text index's own writes inside each turn (FTS5 statements run by chatmem's),
    and the session."""
    engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "trip",
                          strategy="buffer")
    writes = []
    for i in range(turns):
        with metered(store.connection) as meter:
            engine.run_turn("我们五月去杭州看西湖" if i % 2 else f"order ORD-{i} ships to Porto")
        writes.append(meter.index_statements)
        if between:
            engine.between_turns()
    return writes, engine.session.id


def test_no_turn_merges_the_word_index_when_the_chat_merges_it_between_turns(
        tmp_path: Path) -> None:
    with Store(history_file(tmp_path)) as store:
        # Long enough for the merging to reach the third level: with FTS5's default
        # `usermerge` (4) a commit near turn 380 merged.
        writes, session = index_writes_per_turn(store, 400, between=True)
        # Every turn writes its own two messages' entries, and nothing more.
        assert max(writes) == min(writes)
        store.connection.db.execute(
            "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
        found = store.recall.word_matches(session, "杭州 Porto", before_turn=401, limit=800)
        assert set(range(1, 800, 2)) <= set(found.scores)  # every input said one of them


def test_without_the_upkeep_some_turns_merge_the_index_in_their_commit(
        tmp_path: Path) -> None:
    with Store(history_file(tmp_path)) as store:
        writes, _ = index_writes_per_turn(store, 60, between=False)
    assert max(writes) > 2 * min(writes)


def test_the_merge_between_turns_skips_a_file_another_process_is_writing(
        tmp_path: Path) -> None:
    path = history_file(tmp_path)
    with Store(path) as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "trip",
                              strategy="buffer")
        engine.run_turn("我们五月去杭州")
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another chat's commit, in progress
            engine.between_turns()  # neither waits for it nor fails
            other.execute("ROLLBACK")
        finally:
            other.close()
        # The history's own writes still wait for a busy file as before.
        waits = store.connection.db.execute("PRAGMA busy_timeout").fetchone()[0]
        assert waits == BUSY_TIMEOUT_MS
        engine.run_turn("order ORD-2 ships to Porto")
        engine.between_turns()
        assert store.history.turn_count(engine.session.id) == 2
