"""What the slow turns of a steady-state retrieval·hash turn did: each turn tagged.

    python benchmarks/turn_tails.py --turns 1000            # 300 turns, slowest 5% apart
    python benchmarks/turn_tails.py --turns 100 1000 --repeat 500

The history, engine and questions are benchmarks/run.py's `retrieval·hash` cell's (as in
benchmarks/turn_profile.py). Each timed turn (run_turn; between_turns after it, untimed) is
timed in CPU ms (the scripted model's own CPU taken out, as run.py does) and in wall ms,
and tagged with what it ran:
  statements  SQL statements chatmem ran (a trace callback: the full-text index's own
              reads inside a search are not counted)
  searches    word searches (FTS5 bm25 statements) and the rows they returned
  read        candidate rows read from the history (those no earlier build kept)
  embedded    texts the embedder embedded (the query and the turn's new messages)
  gc          Python collections during the turn, by generation, and their CPU ms
  question    which of run.py's three questions (0 English order, 1 Chinese, 2 English
              summary) and its item
The slowest 5% of turns by CPU are compared with the rest, tag by tag: a tag that is
higher in the slow turns names work the turn could shed; none higher says the tail is
the machine's (other processes, caches), not the turn's.

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workloads  # noqa: E402

WARMUP = 5
"""Turns run before timing (turn_profile.WARMUP)."""
TAGS = ("statements", "searches", "search_rows", "read", "embedded", "gc0", "gc1", "gc2",
        "gc_ms")


class Tagger:
    """Counts what a turn does (TAGS), by wrapping what does it; `unwrap` puts it back."""

    def __init__(self) -> None:
        from chatmem.store.recall import RecallTables
        from chatmem.store.sqlite_words import SqliteWords

        self.counts: dict[str, float] = dict.fromkeys(TAGS, 0)
        self._gc_started = 0.0
        self._put_back: list[tuple[Any, str, Any]] = []
        counts = self.counts

        def word_scores(original: Any) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                found = original(*args, **kwargs)
                counts["searches"] += 1
                counts["search_rows"] += len(found)
                return found
            return call

        def candidate_rows(original: Any) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                found = original(*args, **kwargs)
                counts["read"] += len(found)
                return found
            return call

        self._wrap(SqliteWords, "word_scores", word_scores)
        self._wrap(RecallTables, "candidate_rows", candidate_rows)
        gc.callbacks.append(self._collected)

    def _wrap(self, owner: Any, name: str, wrapper: Any) -> None:
        original = getattr(owner, name)
        self._put_back.append((owner, name, original))
        setattr(owner, name, wrapper(original))

    def _collected(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.process_time()
            return
        self.counts[f"gc{info['generation']}"] += 1
        self.counts["gc_ms"] += (time.process_time() - self._gc_started) * 1000

    def statement(self, sql: str) -> None:
        if not sql.startswith("--"):  # FTS5's own statements inside chatmem's
            self.counts["statements"] += 1

    def reset(self) -> None:
        for tag in TAGS:
            self.counts[tag] = 0

    def unwrap(self) -> None:
        gc.callbacks.remove(self._collected)
        for owner, name, original in reversed(self._put_back):
            setattr(owner, name, original)


def tails(turns: int, repeat: int) -> None:
    """Print the CPU and wall of `repeat` turns over `turns` stored turns, and the tags of
    the slowest 5% beside the rest's."""
    from chatmem.config.sections import EmbeddingsSection
    from chatmem.config.settings import Settings
    from chatmem.store import Store

    folder = Path(tempfile.mkdtemp(prefix="turn-tails-"))
    base, path = folder / "base.db", folder / "hash.db"
    workloads.build_chatmem_base(base, turns)
    workloads.add_vectors(base, path, "hash")
    provider = workloads.TimedProvider()
    settings = Settings(embeddings=EmbeddingsSection(provider="hash"))
    tagger = Tagger()
    rows: list[dict[str, float]] = []
    try:
        with Store(path) as store:
            engine = workloads.warmed_retrieval(store, settings, provider, "hash", WARMUP)
            embedder = engine.embedder
            store.db.conn.set_trace_callback(tagger.statement)
            for i in range(WARMUP, WARMUP + repeat):
                tagger.reset()
                provider.cpu_seconds = provider.seconds = 0.0
                embedded = _embedded(embedder)
                started, cpu_started = time.perf_counter(), time.process_time()
                engine.run_turn(workloads.question(i))
                cpu = time.process_time() - cpu_started - provider.cpu_seconds
                wall = time.perf_counter() - started - provider.seconds
                row = dict(tagger.counts, cpu=cpu * 1000, wall=wall * 1000,
                           embedded=_embedded(embedder) - embedded, question=i % 3,
                           item=41 + i % 50)
                rows.append(row)
                store.db.conn.set_trace_callback(None)
                engine.between_turns()
                store.db.conn.set_trace_callback(tagger.statement)
            store.db.conn.set_trace_callback(None)
    finally:
        tagger.unwrap()
    report(turns, rows)


def _embedded(embedder: Any) -> int:
    """Texts `embedder` has embedded so far (the hash embedder counts them)."""
    return int(getattr(embedder, "calls", 0)) + int(getattr(embedder, "queries", 0))


def report(turns: int, rows: list[dict[str, float]]) -> None:
    cpu = [r["cpu"] for r in rows]
    wall = [r["wall"] for r in rows]
    print(f"{turns:,} stored turns, {len(rows)} turns: CPU ms median "
          f"{statistics.median(cpu):.2f} p95 {workloads.percentile(cpu, 0.95):.2f}; wall ms "
          f"median {statistics.median(wall):.2f} p95 {workloads.percentile(wall, 0.95):.2f}")
    cut = workloads.percentile(cpu, 0.95)
    slow = [r for r in rows if r["cpu"] >= cut]
    rest = [r for r in rows if r["cpu"] < cut]
    print(f"  {'tag':<12} {'slowest 5%':>11} {'the rest':>9}   (means a turn)")
    for tag in ("cpu", "wall", *TAGS):
        print(f"  {tag:<12} {statistics.mean(r[tag] for r in slow):11.2f} "
              f"{statistics.mean(r[tag] for r in rest):9.2f}")
    for question in range(3):
        mine = [r["cpu"] for r in rows if r["question"] == question]
        print(f"  question {question}: CPU ms median {statistics.median(mine):.2f}, "
              f"{sum(1 for r in slow if r['question'] == question)} of the slowest")
    # Turn numbers: slow turns in runs of neighbours point at the machine (a busy spell of
    # other processes), spread ones at the turn's own work.
    print("  slowest turns: " + ", ".join(
        f"#{rows.index(r) + WARMUP} {r['cpu']:.1f}" for r in sorted(slow, key=lambda r: -r["cpu"])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1000],
                        help="stored turns of each history")
    parser.add_argument("--repeat", type=int, default=300, help="turns timed at each size")
    args = parser.parse_args()
    for turns in args.turns:
        tails(turns, args.repeat)


if __name__ == "__main__":
    main()
