"""A turn's work does not grow with the history: counted, not timed.

Every strategy and every two-part combination runs turns on a session of
SMALL and of LARGE stored turns (imported in bulk, then caught up). The store
counts the SQL statements a turn runs, the rows it reads back and the SQLite
virtual-machine steps it takes; a counting tokenizer counts the texts it
tokenizes. At LARGE turns a turn must do no more than at SMALL (VM steps may
grow by the B-tree depth). The SQL a turn runs is also checked with EXPLAIN
QUERY PLAN: no full scan of a table that grows.
"""

from __future__ import annotations

import itertools
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from chatmem.config import Settings
from chatmem.engine import Engine, open_session
from chatmem.memory import strategy_names
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store
from chatmem.store.meter import metered

SMALL, LARGE = 100, 5000
TURNS = 16
"""Turns measured per strategy: more than one summary-buffer prune cycle."""
GROWING = {"sessions", "messages", "turns", "token_counts", "summaries", "facts",
           "strategy_state"}
PAIRS = ["+".join(pair) for pair in itertools.combinations(strategy_names(), 2)]
STRATEGIES = [*strategy_names(), *PAIRS]
FLAT = [s for s in STRATEGIES if "buffer" not in s.split("+")]
"""buffer sends the whole history by definition: its work grows, and is checked to."""
USER = [
    "My order number is ORD-{n} and I want to change the delivery address to 12 Oak Street.",
    "我们五月去杭州旅行，预算五千元，请帮我安排第{n}天的行程。",
    "Can you summarize what we decided about item {n}? Keep the dates and amounts exact.",
]
ASSISTANT = [
    "Noted: order ORD-{n}. I will update the delivery address and confirm by email.",
    "好的，第{n}天：上午游西湖，中午在楼外楼吃饭，预算约八百元。",
    "For item {n} we agreed on delivery on March 15 and a budget of 5,000 yuan.",
]


class CountingCounter:
    """The engine's tokenizer, counting the texts it is asked to tokenize."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.key, self.approximate = inner.key, inner.approximate
        self.priming, self.additive = inner.priming, inner.additive
        self.texts = 0

    def count_text(self, text: str) -> int:
        self.texts += 1
        return int(self.inner.count_text(text))

    def count_message(self, role: str, content: str) -> int:
        self.texts += 1
        return int(self.inner.count_message(role, content))

    def count_messages(self, messages: Any) -> int:
        messages = list(messages)
        self.texts += len(messages)
        return int(self.inner.count_messages(messages))


@dataclass(frozen=True)
class Work:
    statements: int
    rows: int
    steps: int
    tokenized: int


def conversation(turns: int) -> Iterator[dict[str, str]]:
    for n in range(1, turns + 1):
        yield {"role": "user", "content": USER[n % 3].format(n=n)}
        yield {"role": "assistant", "content": ASSISTANT[n % 3].format(n=n)}


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """History files of SMALL and LARGE turns, built once (bulk import is fast)."""
    folder = tmp_path_factory.mktemp("complexity")
    paths = {}
    for turns in (SMALL, LARGE):
        paths[turns] = folder / f"{turns}.db"
        with Store(paths[turns]) as store:
            session = store.create_session("long", "window", system="Be brief.")
            store.import_messages(session.id, list(conversation(turns)))
    return paths


def opened(stored: dict[int, Path], turns: int, strategy: str, tmp_path: Path) -> Engine:
    path = tmp_path / f"{strategy}-{turns}.db"
    shutil.copyfile(stored[turns], path)
    store = Store(path)
    engine = open_session(store, Settings(), ScriptedProvider(), "long", strategy=strategy)
    engine.counter = CountingCounter(engine.counter)
    engine.catch_up()
    return engine


def turn_work(engine: Engine, text: str) -> Work:
    counter = engine.counter
    assert isinstance(counter, CountingCounter)
    before = counter.texts
    with metered(engine.store) as meter:
        engine.run_turn(text)
    return Work(meter.statements, meter.rows, meter.steps, counter.texts - before)


def most_work(engine: Engine) -> Work:
    """The most each kind of work any of TURNS turns took (a prune turn included)."""
    works = [turn_work(engine, USER[i % 3].format(n=900_000 + i)) for i in range(TURNS)]
    return Work(*(max(getattr(w, f) for w in works)
                  for f in ("statements", "rows", "steps", "tokenized")))


@pytest.mark.parametrize("strategy", FLAT)
def test_a_turn_does_no_more_work_at_5000_turns_than_at_100(
    stored: dict[int, Path], tmp_path: Path, strategy: str
) -> None:
    work = {}
    for turns in (SMALL, LARGE):
        engine = opened(stored, turns, strategy, tmp_path)
        try:
            engine.run_turn("warm up: the reply of the last imported turn gets counted")
            work[turns] = most_work(engine)
        finally:
            engine.store.close()
    small, large = work[SMALL], work[LARGE]
    assert large.statements <= small.statements, (small, large)
    assert large.rows <= small.rows, (small, large)
    assert large.tokenized <= small.tokenized, (small, large)
    # SQLite's own steps grow with the depth of its B-trees (log n), never with n.
    assert large.steps <= small.steps * 1.5 + 20, (small, large)


def test_buffer_work_grows_with_the_history_as_it_must(
    stored: dict[int, Path], tmp_path: Path
) -> None:
    rows = {}
    for turns in (SMALL, LARGE):
        engine = opened(stored, turns, "buffer", tmp_path)
        try:
            rows[turns] = turn_work(engine, "hello").rows
        finally:
            engine.store.close()
    assert rows[LARGE] > 10 * rows[SMALL]


_SCAN = re.compile(r"^SCAN (\w+)")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_no_query_a_turn_runs_scans_a_growing_table(
    stored: dict[int, Path], tmp_path: Path, strategy: str
) -> None:
    engine = opened(stored, SMALL, strategy, tmp_path)
    try:
        engine.run_turn("warm up")
        ran: list[str] = []
        engine.store.db.conn.set_trace_callback(ran.append)
        for i in range(TURNS):
            engine.run_turn(USER[i % 3].format(n=900_000 + i))
        engine.store.db.conn.set_trace_callback(None)
        queries = {sql for sql in ran if re.match(r"\s*(SELECT|UPDATE|DELETE|WITH)", sql, re.I)}
        assert queries
        for sql in sorted(queries):
            plan = [row[3] for row in engine.store.db.conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
            scans = [d for d in plan if (m := _SCAN.match(d)) and m.group(1) in GROWING]
            aliased = [d for d in plan if (m := _SCAN.match(d))
                       and "VIRTUAL TABLE" not in d and not d.startswith("SCAN (")
                       and m.group(1) not in GROWING]
            assert not scans and not aliased, f"{sql}\n  plan: {plan}"
    finally:
        engine.store.close()
