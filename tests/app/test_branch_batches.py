"""A served conversation branched by an edit of an earlier message (adopted_history.branch_session)
is written as a long adopted history is: batches, each its own transaction, under an unfinished
name that takes the conversation's name in one short transaction at the end.

Review: 60,000 exchanges were written in one transaction, and a concurrent `chatmem ask`
waited 21.6 s for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import History
from test_import_batches import impatient

from chatmem.app.adopted_history import branch_session
from chatmem.app.client_history import ClientMessage
from chatmem.app.workspace import Workspace
from chatmem.config.settings import Settings
from chatmem.errors import StoreError
from chatmem.store import Store
from chatmem.store.unfinished import is_unfinished

BATCH = 3
STORED = [{"role": "user" if i % 2 else "assistant", "content": f"原来的第{i}句 {i}"}
          for i in range(1, 5)]
EDITED = [ClientMessage("user" if i % 2 else "assistant", f"改过的第{i}句 edited {i}")
          for i in range(1, 11)]


@pytest.fixture
def workspace(history: History, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    monkeypatch.setattr("chatmem.app.session_files.IMPORT_BATCH", BATCH)
    with Workspace(Settings(provider="scripted", db=str(history.location))) as ws:
        old = ws.store.sessions.create_session("会话", "window", {"turns": 3}, system="简短")
        ws.store.history.import_messages(old.id, STORED)
        yield ws


def _names(store: Store) -> list[str]:
    """The sessions a listing shows (an unfinished one is left out of it)."""
    return sorted(row.name for row in store.sessions.list_sessions() if not is_unfinished(row.name))


def _contents(store: Store, name: str) -> list[str]:
    return [m.content for m in store.history.messages(store.sessions.session(name).id)]


def test_another_connection_writes_between_batches_and_sees_the_old_session_until_the_end(
        history: History, workspace: Workspace) -> None:
    old = workspace.store.sessions.session("会话")
    seen: list[tuple[int, int, list[str], list[str]]] = []
    with impatient(history.open()) as other:

        def between(done: int, total: int) -> None:
            other.sessions.create_session(f"写-{done}", "buffer")  # commits at once
            seen.append((done, total, _names(other), _contents(other, "会话")))

        kept = branch_session(workspace, "会话", EDITED, progress=between)
        assert kept == "会话.before-edit-1"
        assert [(done, total) for done, total, _, _ in seen] == [(3, 10), (6, 10), (9, 10),
                                                                 (10, 10)]
        # Meanwhile the conversation's name holds its old history, whole; no half branch shows.
        assert [(names, held) for _, _, names, held in seen] == [
            (sorted(["会话", *(f"写-{d}" for d in done)]), [m["content"] for m in STORED])
            for done in ([3], [3, 6], [3, 6, 9], [3, 6, 9, 10])]
        assert _names(other) == sorted(["写-3", "写-6", "写-9", "写-10", "会话", kept])
        assert _contents(other, "会话") == [m.content for m in EDITED]
        assert _contents(other, kept) == [m["content"] for m in STORED]
        branched = other.sessions.session("会话")
        assert other.sessions.session(kept).id == old.id
    assert (branched.strategy, branched.params, branched.system) == ("window", {"turns": 3},
                                                                     "简短")


def test_a_turn_stored_meanwhile_stays_with_the_kept_session(
        history: History, workspace: Workspace) -> None:
    old = workspace.store.sessions.session("会话")
    with history.open() as other:

        def chat(done: int, total: int) -> None:
            if done == BATCH:
                other.history.import_messages(old.id, [{"role": "user", "content": "终端"}])

        kept = branch_session(workspace, "会话", EDITED, progress=chat)
        assert _contents(other, kept) == [m["content"] for m in STORED] + ["终端"]
        assert _contents(other, "会话") == [m.content for m in EDITED]


def test_a_session_renamed_meanwhile_is_not_branched_and_nothing_is_left_behind(
        history: History, workspace: Workspace) -> None:
    with history.open() as other:

        def rename(done: int, total: int) -> None:
            if done == BATCH:
                other.sessions.rename_session("会话", "别的")

        with pytest.raises(StoreError, match="'会话' was renamed or removed while"):
            branch_session(workspace, "会话", EDITED, progress=rename)
        # No unfinished session left behind, no half branch.
        assert [row.name for row in other.sessions.list_sessions()] == ["别的"]
        assert _contents(other, "别的") == [m["content"] for m in STORED]
