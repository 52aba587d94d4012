"""`sessions import` writes a transcript in batches, each its own short transaction, under an
unfinished name (chatmem.store.unfinished) that it gets only at the end.

Review: 80,000 messages were written in one 13 s transaction, and every other writer
(serve, mcp, another REPL's /remember) waited for all of it. Now another connection's
write goes in between two batches, and an import that fails, is stopped or is killed
leaves nothing anyone sees under its name (a killed one's leftovers: removed by the next)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import History

from chatmem.app.search import search_memory
from chatmem.app.session_files import import_transcript
from chatmem.app.sessions import list_sessions
from chatmem.app.workspace import Workspace
from chatmem.config.settings import Settings
from chatmem.errors import StoreError
from chatmem.store import Store
from chatmem.store.unfinished import host_mark, is_unfinished
from chatmem.transcripts.reader import parse_transcript

BUSY_MS = 200
LINES = [f'{{"role": "{"user" if i % 2 else "assistant"}", "content": "第{i}句 sentence {i}",'
         f' "id": "m{i}"}}' for i in range(1, 11)]
TALK = parse_transcript("\n".join(
    [*LINES[:5], '{"probe": "第几句？", "expect_ids": ["m4"], "expect_text": ["第4句"]}',
     *LINES[5:]]), "big.jsonl")


def impatient(store: Store) -> Store:
    """Its busy timeout BUSY_MS: a write waiting on an import's held lock fails, not waits."""
    store.db.busy_timeout_ms = BUSY_MS  # type: ignore[attr-defined]
    store.db.execute(f"PRAGMA busy_timeout = {BUSY_MS}" if store.db.kind == "sqlite"
                     else f"SET lock_timeout = {BUSY_MS}")
    return store


@pytest.fixture
def workspace(history: History) -> Iterator[Workspace]:
    with Workspace(Settings(provider="scripted", db=str(history.location))) as ws:
        yield ws


def _names(store: Store) -> list[str]:
    return sorted(row.name for row in store.sessions.list_sessions())


def test_another_connection_writes_between_batches_and_never_sees_the_name(
        history: History, workspace: Workspace) -> None:
    seen: list[tuple[int, int, list[str]]] = []
    with impatient(history.open()) as other:

        def between(done: int, total: int) -> None:
            other.sessions.create_session(f"写-{done}", "buffer")  # commits at once
            seen.append((done, total, _names(other)))
            assert search_memory(workspace, "第2句 sentence") == []  # nor found across sessions

        imported = import_transcript(workspace, TALK, "大", progress=between, batch=3)
        assert [(done, total) for done, total, _ in seen] == [(3, 10), (6, 10), (9, 10),
                                                              (10, 10)]
        for _, _, names in seen:  # under way: only its unfinished name, no "大"
            assert "大" not in names and sum(map(is_unfinished, names)) == 1
        assert _names(other) == ["写-10", "写-3", "写-6", "写-9", "大"]
        session = other.sessions.session("大")
        stored = other.history.messages(session.id)
    assert imported.session.name == "大" and imported.messages == 10
    assert [(m.position, m.turn, m.content, m.external_id) for m in stored] == [
        (i, (i + 1) // 2, f"第{i}句 sentence {i}", f"m{i}") for i in range(1, 11)]
    assert workspace.store.sessions.probes(session.id)[0]["after_position"] == 5
    assert [hit.session for hit in search_memory(workspace, "第2句 sentence")][:1] == ["大"]


def test_a_name_taken_while_it_imports_leaves_nothing_of_the_import(
        history: History, workspace: Workspace) -> None:
    """Found at the very end, after every batch was written: the import is all or nothing."""
    with history.open() as other:
        def take(done: int, total: int) -> None:
            if done == total:
                other.sessions.create_session("大", "window")

        with pytest.raises(StoreError, match="a session named '大' already exists"):
            import_transcript(workspace, TALK, "大", progress=take, batch=4)
        assert _names(other) == ["大"]
        session = other.sessions.session("大")
        assert session.strategy == "window" and other.history.messages(session.id) == []


def test_a_stopped_import_leaves_nothing_and_the_name_free(
        history: History, workspace: Workspace) -> None:
    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt  # Ctrl-C, or SIGTERM/SIGHUP in the CLI, after one batch

    with pytest.raises(KeyboardInterrupt):
        import_transcript(workspace, TALK, "大", progress=stop, batch=4)
    with history.open() as other:
        assert _names(other) == []
    again = import_transcript(workspace, TALK, "大", batch=4)
    assert [s.name for s in list_sessions(workspace)] == ["大"] == [again.session.name]


def test_a_killed_imports_session_is_hidden_and_removed_by_the_next_import(
        history: History, workspace: Workspace) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = f"unfinished-import.{gone.stdout.strip()}.{host_mark()}.0123abcd"
    with history.open() as other:  # as a kill -9 after the first batch leaves it
        left = other.sessions.create_session(dead, "buffer", unfinished=True)
        other.history.import_messages(left.id, [{"role": "user", "content": "我的航班 MU5137"}])
    assert list_sessions(workspace) == []
    import_transcript(workspace, TALK, "大")
    with history.open() as other:
        assert _names(other) == ["大"]
