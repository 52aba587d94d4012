"""A turn and another process's long write (`sessions import` of a large transcript holds the
write lock for as long as it writes): the turn waits for it, says so once, and keeps its
reply, on every backend of the `history` fixture. Its busy timeout is lowered to 0.2 s so
that a write of 1.5 s outlasts it as a 13 s import outlasts the 5 s one."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from acting_providers import ActsWhile
from conftest import History
from registered import open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.errors import StoreError, StoreFailure
from chatmem.history_notices import WaitingForWrite
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

BUSY_MS = 200
HELD_S = 1.5


def impatient(store: Store) -> None:
    """The store's busy timeout (SQLite's busy_timeout, PostgreSQL's lock_timeout) as BUSY_MS."""
    store.db.busy_timeout_ms = BUSY_MS  # type: ignore[attr-defined]
    store.db.execute(f"PRAGMA busy_timeout = {BUSY_MS}" if store.db.kind == "sqlite"
                     else f"SET lock_timeout = {BUSY_MS}")


class LongWrite:
    """Another process's write transaction held for HELD_S, in a thread of its own
    connection; `start` returns once it holds the write lock."""

    def __init__(self, history: History, held_s: float = HELD_S) -> None:
        self.history = history
        self.held_s = held_s
        self.locked = threading.Event()
        self.thread = threading.Thread(target=self._hold)

    def _hold(self) -> None:
        with self.history.open() as other, other.write():
            other.sessions.create_session("import", "buffer", {})
            self.locked.set()
            time.sleep(self.held_s)

    def start(self) -> None:
        self.thread.start()
        assert self.locked.wait(10)

    def join(self) -> None:
        self.thread.join()


@pytest.fixture
def heard(history: History) -> Iterator[tuple[Store, list[Any]]]:
    told: list[Any] = []
    with history.open(on_upgrade=told.append) as store:
        impatient(store)
        yield store, told


def engine_of(store: Store, name: str = "waits") -> Engine[Store]:
    settings = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="none"))
    return open_session(store, settings, ScriptedProvider(), name, strategy="buffer")


def test_a_reply_finished_during_another_process_long_write_is_stored_after_it(
        history: History, heard: tuple[Store, list[Any]]) -> None:
    """It was lost: the commit waited the busy timeout, then "the turn was not stored: … is
    busy", though the reply was shown (and paid for)."""
    store, told = heard
    engine = engine_of(store)
    engine.run_turn("我住在杭州")
    told.clear()
    write = LongWrite(history)
    # The long write starts while the reply streams: it still holds the lock when the
    # finished reply is to be stored.
    engine.provider = ActsWhile("stream", write.start)
    started = time.monotonic()
    result = engine.run_turn("Where do I live? 我住在哪里？")
    waited = time.monotonic() - started
    write.join()
    assert result.record.number == 2
    assert store.history.turn_count(engine.session.id) == 2
    assert [(type(n), n.replied) for n in told] == [(WaitingForWrite, True)]
    assert waited >= HELD_S * 0.9
    assert store.sessions.find_session("import") is not None  # the other write kept too


def test_a_turn_waiting_to_be_sent_says_so_and_is_sent_after_the_write(
        history: History, heard: tuple[Store, list[Any]]) -> None:
    """Before it sends, a turn checks that its reply can be stored: that check waited the
    busy timeout without a word, then refused."""
    store, told = heard
    engine = engine_of(store)
    write = LongWrite(history)
    write.start()
    result = engine.run_turn("Is it raining in 杭州?")
    write.join()
    assert result.record.number == 1
    assert [(type(n), n.replied) for n in told] == [(WaitingForWrite, False)]


def test_the_wait_names_who_holds_the_lock_where_the_backend_can_tell(
        history: History, heard: tuple[Store, list[Any]]) -> None:
    """On PostgreSQL any role may take the advisory lock writers queue on: the wait named
    nobody, so a person could not tell a colleague's import from a stray connection."""
    store, told = heard
    engine = engine_of(store)
    write = LongWrite(history)
    write.start()
    engine.run_turn("Is it raining in 杭州?")
    write.join()
    [notice] = told
    if history.kind != "postgres":
        assert notice.holder is None  # a SQLite file cannot say which process holds it
        return
    assert notice.holder is not None
    assert notice.holder.pid not in (0, store.db.execute("SELECT pg_backend_pid()").fetchone()[0])
    assert notice.holder.role == store.db.execute("SELECT current_user").fetchone()[0]
    assert (notice.holder.application or "").startswith("chatmem schema ")


def test_a_turn_at_once_after_another_write_says_nothing(
        heard: tuple[Store, list[Any]]) -> None:
    store, told = heard
    engine = engine_of(store)
    engine.run_turn("hello")
    engine.run_turn("你好")
    assert told == []


def test_a_new_sessions_first_turn_waits_for_another_process_long_write(
        history: History, heard: tuple[Store, list[Any]]) -> None:
    """Creating the session was not a patient write: `chatmem ask NEW` failed after the busy
    timeout, without a word of waiting, where a turn of an existing session waited."""
    store, told = heard
    write = LongWrite(history)
    write.start()
    engine = engine_of(store, "新的会话")
    result = engine.run_turn("Is it raining in 杭州?")
    write.join()
    assert result.record.number == 1
    assert store.history.turn_count(engine.session.id) == 1
    assert [(type(n), n.replied) for n in told] == [(WaitingForWrite, False)]


def test_a_turn_that_gives_up_waiting_names_how_long_it_waited(
        history: History, heard: tuple[Store, list[Any]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL said "held it for over 0.2 s" (its busy timeout) after the long wait."""
    import chatmem.store.postgres_backend as postgres_backend
    import chatmem.store.sqlite_backend as sqlite_backend

    for backend in (postgres_backend, sqlite_backend):
        monkeypatch.setattr(backend, "WRITE_WAIT_S", 1)
    store, told = heard
    engine = engine_of(store)
    write = LongWrite(history, held_s=4)
    write.start()
    with pytest.raises(StoreError) as refused:
        engine.run_turn("Is it raining in 杭州?")
    write.join()
    assert refused.value.kind is StoreFailure.BUSY
    assert "held it for over 1 s" in str(refused.value)
    assert [(type(n), n.replied) for n in told] == [(WaitingForWrite, False)]
