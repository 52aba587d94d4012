"""Where the CPU of a steady-state retrieval·hash turn goes, by part and by SQL statement.

    python benchmarks/turn_profile.py --turns 100 1000            # parts of a turn
    python benchmarks/turn_profile.py --turns 1000 --statements   # SQL statements
    python benchmarks/turn_profile.py --turns 1000 --embedder none  # the words-only cell
    python benchmarks/turn_profile.py --turns 100 1000 --calls    # Python calls a turn

The history, engine and questions are benchmarks/run.py's `retrieval·hash` cell's
(workloads.build_chatmem_base, add_vectors, chatmem_cell's engine). After WARMUP turns,
each of --repeat turns (run_turn, then between_turns untimed) is timed in CPU seconds
(time.process_time: other processes on a loaded machine do not inflate it; the scripted
model's own CPU is taken out as run.py does), and so is each call of the parts named in
PARTS (inclusive: a part inside another counts in both) or, with --statements, each SQL
statement (its execute and the fetches of its rows).

With --calls, each timed turn's Python function calls are counted instead
(sys.setprofile "call" events of run_turn, between_turns left out): a count does not move
with the machine's load, so a change's cost can be compared on a busy machine.

Why not cProfile: its cost per call is of the order of a small function's, so it inflates
code made of many short calls (a round() a value, a dict a row) against code that runs in
C (an FTS5 search), and it ranked parts of a turn in an order a clock does not bear out.

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workloads  # noqa: E402

WARMUP = 5
"""Turns run before timing: the first turns of a process read what later ones keep."""

PARTS = (
    "chatmem.memory.retrieval:RetrievalStrategy.build",
    "chatmem.store.recall:RecallTables.word_matches",
    "chatmem.memory.retrieval:words_scores",
    "chatmem.memory.recall_sources:StoredRecall.dense",
    "chatmem.memory.recall_sources:StoredRecall.candidates",
    "chatmem.memory.recall_sources:Candidates.ranked",
    "chatmem.memory.speaker_prior:prefer_named",
    "chatmem.memory.retrieval:pack",
    "chatmem.memory.retrieval:as_json",
    "chatmem.store.turns:TurnTables.commit_turn",
    "chatmem.store.contexts:compact",
    "chatmem.store.records:TurnRecord.to_row",
    "chatmem.memory.vector_backlog:VectorBacklog.finish",
    # The meaning route's own (with --embedder none these stay at 0: set beside the hash
    # cell's, they are what meaning adds to a turn, with pack's MMR and the backlog's).
    "chatmem.embeddings.hashed:HashEmbedder.embed",
    "chatmem.memory.recall_sources:held_vectors",
    "chatmem.memory.recall_sources:dense_scores",
    "chatmem.memory.retrieval:pool",
    "chatmem.memory.later_mentions:pull_in",
)
"""module:attribute of each part timed; a function another module imported by name is
named where it is called from (retrieval's `pack`)."""


def wrap_parts(spent: dict[str, float]) -> Callable[[], None]:
    """Time each of PARTS into `spent`; what is returned puts them back as they were."""
    wrapped: list[tuple[Any, str, Any]] = []
    for name in PARTS:
        module_name, path = name.split(":")
        owner: Any = importlib.import_module(module_name)
        *outer, attribute = path.split(".")
        for step in outer:
            owner = getattr(owner, step)
        spent[path] = 0.0
        original = getattr(owner, attribute)
        wrapped.append((owner, attribute, original))
        setattr(owner, attribute, timed(original, path, spent))

    def unwrap() -> None:
        for owner, attribute, original in reversed(wrapped):
            setattr(owner, attribute, original)
    return unwrap


def timed(function: Callable[..., Any], name: str,
          spent: dict[str, float]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - started
    return call


class Statements:
    """CPU, executions and rows read of each SQL text, while `on`."""

    def __init__(self) -> None:
        self.on = False
        self.seen: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0])

    def add(self, sql: str, seconds: float, runs: int = 0, rows: int = 0) -> None:
        if self.on:
            entry = self.seen[sql]
            entry[0] += runs
            entry[1] += seconds
            entry[2] += rows


class _Cursor:
    def __init__(self, cursor: Any, sql: str, meter: Statements) -> None:
        self._cursor, self._sql, self._meter = cursor, sql, meter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    def _read(self, read: Callable[..., Any], *args: Any) -> Any:
        started = time.process_time()
        found = read(*args)
        rows = len(found) if isinstance(found, list) else int(found is not None)
        self._meter.add(self._sql, time.process_time() - started, rows=rows)
        return found

    def fetchall(self) -> Any:
        return self._read(self._cursor.fetchall)

    def fetchone(self) -> Any:
        return self._read(self._cursor.fetchone)

    def fetchmany(self, *args: Any) -> Any:
        return self._read(self._cursor.fetchmany, *args)

    def __iter__(self) -> Iterator[Any]:
        rows = iter(self._cursor)
        while True:
            started = time.process_time()
            row = next(rows, None)
            self._meter.add(self._sql, time.process_time() - started, rows=row is not None)
            if row is None:
                return
            yield row


class _Connection:
    """sqlite3's connection, each statement timed (the store's own wrapping stays)."""

    def __init__(self, conn: Any, meter: Statements) -> None:
        self._conn, self._meter = conn, meter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, sql: str, *args: Any) -> Any:
        started = time.process_time()
        cursor = self._conn.execute(sql, *args)
        self._meter.add(sql, time.process_time() - started, runs=1)
        return _Cursor(cursor, sql, self._meter)

    def executemany(self, sql: str, *args: Any) -> Any:
        started = time.process_time()
        cursor = self._conn.executemany(sql, *args)
        self._meter.add(sql, time.process_time() - started, runs=1)
        return cursor


def profile(turns: int, repeat: int, statements: bool, embedder: str = "hash") -> None:
    """Print where the CPU of `repeat` turns over a history of `turns` goes."""
    spent: dict[str, float] = {}
    unwrap = (lambda: None) if statements else wrap_parts(spent)
    try:
        _profile(turns, repeat, statements, spent, embedder)
    finally:
        unwrap()


def _profile(turns: int, repeat: int, statements: bool, spent: dict[str, float],
             embedder: str = "hash") -> None:
    from chatmem.config.sections import EmbeddingsSection
    from chatmem.config.settings import Settings
    from chatmem.store import Store

    folder = Path(tempfile.mkdtemp(prefix="turn-profile-"))
    base, path = folder / "base.db", folder / "hash.db"
    workloads.build_chatmem_base(base, turns)
    workloads.add_vectors(base, path, "hash")
    provider = workloads.TimedProvider()
    # As workloads.chatmem_cell opens its `retrieval·hash` and words-only cells.
    settings = Settings(embeddings=EmbeddingsSection(provider=embedder))
    meter = Statements()
    with Store(path) as store:
        engine = workloads.warmed_retrieval(store, settings, provider, embedder, WARMUP)
        if statements:
            store.db.conn = store.db.sqlite.conn = _Connection(store.db.conn, meter)
        for name in spent:
            spent[name] = 0.0
        cpu: list[float] = []
        for i in range(WARMUP, WARMUP + repeat):
            provider.cpu_seconds = 0.0
            meter.on = True
            started = time.process_time()
            engine.run_turn(workloads.question(i))
            cpu.append(time.process_time() - started - provider.cpu_seconds)
            meter.on = False
            engine.between_turns()
    total = sum(cpu)
    words_only = " (words only)" if embedder == "none" else ""
    print(f"{turns:,} stored turns{words_only}, {repeat} turns: CPU a turn median "
          f"{statistics.median(cpu) * 1000:.2f} ms, mean {total / repeat * 1000:.2f} ms")
    if statements:
        seen = sorted(meter.seen.items(), key=lambda item: -item[1][1])
        in_sql = sum(entry[1] for _, entry in seen)
        print(f"  SQL {in_sql / repeat * 1000:.2f} ms a turn ({100 * in_sql / total:.0f}%), "
              f"{sum(entry[0] for _, entry in seen) / repeat:.1f} statements")
        for sql, (runs, seconds, rows) in seen[:25]:
            print(f"  {seconds / repeat * 1000:7.3f} ms {100 * seconds / total:5.1f}% "
                  f"{runs / repeat:5.2f}x {rows / repeat:7.1f} rows  {' '.join(sql.split())[:90]}")
        return
    for name, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        print(f"  {seconds / repeat * 1000:7.3f} ms {100 * seconds / total:5.1f}%  {name}")


def count_calls(turns: int, repeat: int, embedder: str = "hash") -> None:
    """Print the Python function calls of each of `repeat` steady turns over a history of
    `turns` (the same history, engine and questions as `profile`)."""
    from types import FrameType

    from chatmem.config.sections import EmbeddingsSection
    from chatmem.config.settings import Settings
    from chatmem.store import Store

    folder = Path(tempfile.mkdtemp(prefix="turn-calls-"))
    base, path = folder / "base.db", folder / "hash.db"
    workloads.build_chatmem_base(base, turns)
    workloads.add_vectors(base, path, "hash")
    provider = workloads.TimedProvider()
    settings = Settings(embeddings=EmbeddingsSection(provider=embedder))
    counted = [0]

    def count(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":  # Python functions only ("c_call" is a builtin's)
            counted[0] += 1

    calls: list[int] = []
    with Store(path) as store:
        engine = workloads.warmed_retrieval(store, settings, provider, embedder, WARMUP)
        for i in range(WARMUP, WARMUP + repeat):
            counted[0] = 0
            sys.setprofile(count)
            try:
                engine.run_turn(workloads.question(i))
            finally:
                sys.setprofile(None)
            calls.append(counted[0])
            engine.between_turns()
    words_only = " (words only)" if embedder == "none" else ""
    print(f"{turns:,} stored turns{words_only}, {repeat} turns: Python calls a turn mean "
          f"{statistics.mean(calls):,.1f}, median {statistics.median(calls):,.0f}, "
          f"max {max(calls):,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000],
                        help="stored turns of each history")
    parser.add_argument("--repeat", type=int, default=300, help="turns timed at each size")
    parser.add_argument("--statements", action="store_true",
                        help="time each SQL statement rather than the parts")
    parser.add_argument("--embedder", choices=("hash", "none"), default="hash",
                        help="the hash cell's embedder, or none: the words-only cell")
    parser.add_argument("--calls", action="store_true",
                        help="count each turn's Python function calls rather than time it")
    args = parser.parse_args()
    for turns in args.turns:
        if args.calls:
            count_calls(turns, args.repeat, args.embedder)
            continue
        profile(turns, args.repeat, args.statements, args.embedder)


if __name__ == "__main__":
    main()
