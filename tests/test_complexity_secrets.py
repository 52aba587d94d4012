"""A secret said early does not make every later memory update re-read the history.

The secret guard re-reads the turns that said a secret (sensitive_turns.guard_for). With a
PIN in turn 1, each fact extraction and each summary fold read every message from turn 1
to the batch: a turn's work grew with the history, a long eval with its square. Counted,
not timed, as in test_complexity.py: two sessions of the same store, SMALL and LARGE
turns after the same PIN, must read as many rows a turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from meter import metered
from registered import open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.memory.sensitive_turns import SENSITIVE_KEY
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

SMALL, LARGE = 40, 400
TURNS = 6
PIN = "4471"
SETTINGS = Settings(embeddings=EmbeddingsSection(provider="none"))


def conversation(turns: int) -> Iterator[dict[str, str]]:
    yield {"role": "user", "content": f"My gym locker code is {PIN}."}
    yield {"role": "assistant", "content": "Noted."}
    for n in range(2, turns + 1):
        yield {"role": "user", "content": f"第{n}天去西湖，the weather was mild."}
        yield {"role": "assistant", "content": "I see. Tell me more."}


@pytest.mark.parametrize("strategy", ["entity", "summary"])
def test_a_pin_in_the_first_turn_costs_a_turn_the_same_reads_at_any_length(
        store: Store, tmp_path: Path, strategy: str) -> None:
    rows, steps = {}, {}
    for turns in (SMALL, LARGE):
        log = tmp_path / f"{strategy}-{turns}.jsonl"
        name = f"{strategy}-{turns}"
        session = store.sessions.create_session(name, "window", system="Be brief.")
        store.history.import_messages(session.id, list(conversation(turns)))
        engine = open_session(store, SETTINGS, ScriptedProvider(log_path=log), name,
                              strategy=strategy)
        engine.catch_up()
        assert store.memory.strategy_state(session.id, SENSITIVE_KEY) == {"turns": [1]}
        counted = []
        for i in range(TURNS):
            with metered(store) as meter:
                engine.run_turn(f"What did we do on day {i}? Remind me, was it {PIN}?")
            counted.append((meter.rows, meter.steps))
        rows[turns] = max(r for r, _ in counted)
        steps[turns] = max(s for _, s in counted)
        # Still guarded: the PIN repeated turns later never reaches a helper model.
        helper = [m["content"] for line in log.read_text(encoding="utf-8").splitlines()
                  if (e := json.loads(line))["purpose"] != "chat" for m in e["messages"]]
        assert helper and not any(PIN in text for text in helper)
    # A read that grew with the history would add a row per message (800 more here).
    assert rows[LARGE] <= rows[SMALL] * 1.1 + 8, rows
    # SQLite's own steps (none counted on PostgreSQL): the wanted turns read through the
    # turn index, not by scanning the session's messages for them.
    assert steps[LARGE] <= steps[SMALL] * 1.25 + 20, steps


def secrets_every_turn(turns: int) -> Iterator[dict[str, str]]:
    for n in range(1, turns + 1):
        yield {"role": "user", "content": f"The wifi password for day {n} is heron-{n}-blue!"}
        yield {"role": "assistant", "content": "Noted, I will not repeat it."}


@pytest.mark.parametrize("strategy", ["entity", "summary"])
def test_a_catch_up_of_turns_each_with_a_secret_reads_each_turn_about_once(
        store: Store, strategy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fold's guard re-read every earlier turn that said a secret: a catch-up of 500
    turns with secrets took 12.6 s, growing with the square of its length. The turns the
    guard asks for are counted (the history's own reading, spied on, not replaced)."""
    asked: list[int] = []
    history = type(store.history)
    read = history.messages_in_turns

    def counted(self: object, session_id: int, turns: list[int]) -> object:
        asked.extend(turns)
        return read(self, session_id, turns)  # type: ignore[arg-type]

    monkeypatch.setattr(history, "messages_in_turns", counted)
    name = f"{strategy}-secrets"
    session = store.sessions.create_session(name, "window", system="Be brief.")
    store.history.import_messages(session.id, list(secrets_every_turn(LARGE)))
    engine = open_session(store, SETTINGS, ScriptedProvider(), name, strategy=strategy)
    engine.catch_up()
    assert store.memory.strategy_state(session.id, SENSITIVE_KEY)["turns"] == list(
        range(1, LARGE + 1))
    # Once each, and the turn before a batch again: not every earlier one at each batch
    # (3.4 times each in entity's batches of 10, 9.5 in summary's).
    assert len(asked) <= LARGE * 1.1, len(asked) / LARGE
