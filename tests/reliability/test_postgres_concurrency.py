"""Several processes chatting on one PostgreSQL session at once, and a client killed mid-turn.

Guarantee, as on a SQLite file: every turn kept once, turn numbers and message
positions unique and gap-free, summary-buffer folds each message once, and a
client that dies inside its write leaves nothing of that turn (the server rolls
its transaction back and releases its write lock).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from registered import open_session
from waiting import wait_until

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store
from chatmem.store.connection import fetch_value

PROCESSES, TURNS = 4, 25
"""The default run: 4 processes × 25 turns on one session."""
FULL_PROCESSES, FULL_TURNS = 8, 200
"""Issue 22's acceptance run (-m slow): 8 processes × 200 turns, 1,600 turns."""
STRATEGY = "summary-buffer:max_tokens=300"
SETTINGS = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="none"))
_spawn = multiprocessing.get_context("spawn")
"""A fresh interpreter per client, as separate chatmem processes are (no inherited connection)."""


def line(tag: str, i: int) -> str:
    return f"{tag} says line {i} 订单 {i}"


def chat(url: str, tag: str, turns: int, start: Any) -> None:
    """One client: its own connection, the engine, the scripted provider, `turns` turns."""
    start.wait()
    strategy, _, param = STRATEGY.partition(":")
    key, _, value = param.partition("=")
    with Store(url) as store:
        engine = open_session(store, SETTINGS, ScriptedProvider(), "s", strategy=strategy,
                              params={key: value})
        for i in range(turns):
            engine.run_turn(line(tag, i))


def chat_until_killed(url: str, inside_write: str) -> None:
    """One turn whose commit stops half-way, inside its write transaction, until killed."""
    from chatmem.store.postgres_backend import PostgresBackend

    original = PostgresBackend.index_words

    def index_then_hang(self: PostgresBackend, entries: Sequence[tuple[int, str]]) -> None:
        original(self, entries)  # the turn's messages are written, not committed
        Path(inside_write).touch()
        signal.pause()

    PostgresBackend.index_words = index_then_hang  # type: ignore[method-assign]
    with Store(url) as store:
        engine = open_session(store, SETTINGS, ScriptedProvider(), "s", strategy="window")
        engine.run_turn("this turn never lands ZQX-0042")


def run_clients(url: str, processes: int, turns: int) -> None:
    Store(url).close()
    start = _spawn.Event()
    clients = [_spawn.Process(target=chat, args=(url, f"p{i}", turns, start))
               for i in range(processes)]
    for client in clients:
        client.start()
    start.set()
    for client in clients:
        client.join(timeout=600)
    assert [c.exitcode for c in clients] == [0] * processes


def assert_every_turn_kept_once(url: str, processes: int, turns: int) -> None:
    with Store(url) as store:
        session = store.sessions.session("s")
        messages = store.history.messages(session.id)
        assert [m.position for m in messages] == list(range(1, 2 * processes * turns + 1))
        assert [m.role for m in messages] == ["user", "assistant"] * (processes * turns)
        assert [m.turn for m in messages] == [i // 2 + 1 for i in range(len(messages))]
        assert sorted(m.content for m in messages if m.role == "user") == sorted(
            line(f"p{p}", i) for p in range(processes) for i in range(turns))
        numbers = [(t.number, t.history_turn, t.status) for t in store.turns.turns(session.id)]
        count = processes * turns
        assert numbers == [(n, n, "ok") for n in range(1, count + 1)]
        covered = [message_id for version in store.memory.summaries(session.id, "summary-buffer")
                   for message_id in version.covered_ids]
        assert covered, "summary-buffer never folded: the test would prove nothing"
        assert len(covered) == len(set(covered)), "a message was folded twice"
        assert covered == sorted(covered), "a fold covered an older point than the one before"


def test_four_clients_on_one_session_keep_every_turn_and_fold_each_message_once(
    pg_url: str,
) -> None:
    run_clients(pg_url, PROCESSES, TURNS)
    assert_every_turn_kept_once(pg_url, PROCESSES, TURNS)


@pytest.mark.slow
def test_eight_clients_times_two_hundred_turns_on_one_session(pg_url: str) -> None:
    run_clients(pg_url, FULL_PROCESSES, FULL_TURNS)
    assert_every_turn_kept_once(pg_url, FULL_PROCESSES, FULL_TURNS)


def test_a_client_killed_inside_its_turn_leaves_no_partial_turn(
    pg_url: str, tmp_path: Path
) -> None:
    with Store(pg_url) as store:
        engine = open_session(store, SETTINGS, ScriptedProvider(), "s", strategy="window")
        engine.run_turn("kept before ORD-1")
        before = [(m.position, m.content) for m in store.history.messages(engine.session.id)]
    inside_write = tmp_path / "inside-write"
    client = _spawn.Process(target=chat_until_killed, args=(pg_url, str(inside_write)))
    client.start()
    try:
        # A spawned process imports chatmem first: on a busy machine that alone can take
        # a minute, so the wait is for the condition (HANG bounds only a real hang).
        wait_until(lambda: inside_write.exists() or not client.is_alive(),
                   "the client reached its write or ended")
        assert inside_write.exists(), f"the client never reached its write ({client.exitcode})"
        assert client.pid is not None
        os.kill(client.pid, signal.SIGKILL)
    finally:
        client.join(30)
    assert client.exitcode == -signal.SIGKILL
    with Store(pg_url) as store:
        session = store.sessions.session("s")
        assert [(m.position, m.content) for m in store.history.messages(session.id)] == before
        assert [t.number for t in store.turns.turns(session.id)] == [1]
        assert fetch_value(store.db, "SELECT count(*) FROM message_words") == len(before)
        # The dead client's write lock went with its connection: the next turn is stored.
        engine = open_session(store, SETTINGS, ScriptedProvider(), "s", strategy="window")
        engine.run_turn("after the kill ORD-2")
        assert [m.position for m in store.history.messages(session.id)] == [1, 2, 3, 4]
        assert [t.number for t in store.turns.turns(session.id)] == [1, 2]
