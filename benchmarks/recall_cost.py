"""What recall costs: build time at 10,000 turns, the wait after a turn, backfill speed.

    python benchmarks/recall_cost.py                  # 10,000 turns
    python benchmarks/recall_cost.py --turns 2000 --repeat 5

Rows (median of --repeat; `tokens` is built in the same run as a reference, since
the machine's load changes absolute times):

  build bm25        `retrieval mode=bm25` build_context on a real SQLite file of N turns,
                    after the first build (the session's timeline is then cached)
  build hybrid      the same with vectors for every message (random unit vectors stored
                    under a test key, so N turns need not be embedded first) and a
                    query vector from the same stub: ranking, fusion, MMR and packing
  first build       the first hybrid build of a process (reads the timeline and vectors)
  query embedding   one query through the real local embedder (chatmem[embed])
  after a turn      Engine.update_memory after a committed turn with the local embedder:
                    the time before the next prompt can be shown (embedding runs on a
                    background thread)
  collect           the next build's wait for that background work
  backfill          messages/s of `chatmem index`'s loop with the local embedder

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.engine import open_session
from chatmem.plugins import load_registries
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store, VectorRow

LINES = [
    "My order number is ORD-{n} and I want to change the delivery address to 12 Oak Street.",
    "我们五月去杭州旅行，预算五千元，请帮我安排第{n}天的行程。",
    "Can you summarize what we decided about item {n}? Keep the dates and amounts exact.",
    "I spent the afternoon on a photography walk number {n}, it took longer than expected.",
]


class StubEmbedder:
    """Random unit vectors under a fixed key: the ranking's cost without a model's."""

    key = "stub:384"
    dimensions = 384

    def embed(self, texts: Any, *, query: bool = False) -> np.ndarray:
        # The same vector for the same text, like a model.
        rows = np.stack([np.random.default_rng(abs(hash(str(t))) % 2**32).normal(
            size=self.dimensions) for t in texts]).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def median_ms(action: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def filled_store(path: Path, turns: int, embedder: StubEmbedder) -> None:
    with Store(path) as store:
        session = store.sessions.create_session("long", "retrieval")
        messages = []
        for n in range(turns):
            messages.append({"role": "user", "content": LINES[n % 4].format(n=n),
                             "ts": "2026-01-01T00:00:00+00:00"})
            messages.append({"role": "assistant", "content": f"Noted, item {n}."})
        store.history.import_messages(session.id, messages)
        ids = [m.id for m in store.history.messages(session.id)]
        vectors = embedder.embed(ids).astype(np.float16)
        store.vectors.save_vectors(embedder.key, embedder.dimensions,
                                   [VectorRow(i, v.tobytes(), v.tobytes())
                            for i, v in zip(ids, vectors, strict=True)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--think", type=float, default=2.0,
                        help="seconds between a reply and the next input")
    args = parser.parse_args(argv)
    rows: list[tuple[str, str]] = []
    stub = StubEmbedder()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "h.db"
        filled_store(path, args.turns, stub)
        with Store(path) as store:
            settings = Settings(embeddings=EmbeddingsSection(provider="none"))
            strategies = load_registries().strategies
            engine = open_session(store, settings, ScriptedProvider(), "long",
                                  strategy=strategies.parse("retrieval"),
                                  strategies=strategies, embedder=stub)  # type: ignore[arg-type]
            question = "What did we decide about the delivery address for ORD-42?"
            cold = median_ms(lambda: engine.build_context(question), 1)
            rows.append(("first build (hybrid, cold)", f"{cold:.1f} ms"))
            create_strategy = load_registries().strategies.strategy
            for label, strategy in (("tokens (reference)", create_strategy("tokens")),
                                    ("bm25", create_strategy("retrieval", {"mode": "bm25"})),
                                    ("hybrid", create_strategy("retrieval"))):
                engine.strategy = strategy
                engine.build_context(question)
                warm = median_ms(lambda: engine.build_context(question), args.repeat)
                rows.append((f"build {label} at {args.turns:,} turns", f"{warm:.1f} ms"))
    try:
        local = load_registries().create_embedder("local")
        local.embed(["warm up"], query=True)
    except Exception as e:  # the rows say why they are missing
        rows.append(("local embedder", f"not available: {e}"))
        local = None
    if local is not None:
        query = median_ms(lambda: local.embed(["What is my sister called?"], query=True),
                          args.repeat)
        rows.append(("query embedding (local)", f"{query:.1f} ms"))
        with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "t.db") as store:
            strategies = load_registries().strategies
            engine = open_session(store, Settings(embeddings=EmbeddingsSection(provider="none")),
                                  ScriptedProvider(), "t", strategy=strategies.parse("retrieval"),
                                  strategies=strategies, embedder=local)
            waits: list[float] = []
            collects: list[float] = []
            update = engine.strategy.update

            def timed_update(env: Any) -> list[str]:
                # What run_turn does after the commit, before it returns to the prompt.
                started = time.perf_counter()
                try:
                    return update(env)
                finally:
                    waits.append((time.perf_counter() - started) * 1000)

            engine.strategy.update = timed_update  # type: ignore[method-assign]
            for n in range(12):
                engine.run_turn(LINES[n % 4].format(n=n) + " " + LINES[(n + 1) % 4].format(n=n))
                time.sleep(args.think)  # the user types the next input
                started = time.perf_counter()
                engine.build_context("next question")
                collects.append((time.perf_counter() - started) * 1000)
            rows.append(("after a turn (until the next prompt)",
                         f"median {statistics.median(waits):.1f} ms, max {max(waits):.1f} ms"))
            rows.append((f"next build after {args.think:g} s, collecting vectors",
                         f"median {statistics.median(collects):.1f} ms,"
                         f" max {max(collects):.1f} ms"))
        from chatmem.memory.vector_rows import embed_pending
        from chatmem.store import PendingText

        texts = [LINES[n % 4].format(n=n) for n in range(128)]
        pending = [PendingText(i, t, texts[i - 1] if i else None) for i, t in enumerate(texts)]
        started = time.perf_counter()
        embed_pending(local, pending)
        rate = len(pending) / (time.perf_counter() - started)
        rows.append(("backfill (own + context vectors)", f"{rate:.1f} messages/s"))
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
