"""Recall on PostgreSQL with pgvector: the database picks the dense candidates, and recall
ranks exactly as it does over every stored vector in numpy."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fact_conversations import CHINESE_FILLER, ENGLISH_FILLER, mixed_line, run_conversation
from registered import create_strategy

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.memory import recall_sources
from chatmem.store import Store

QUERIES = ("What was booking BK-1011 about?", "tell me about hotels and museums",
           "王小明的预算是多少？", "三月十五日的航班", "curious thing about food")


@pytest.fixture
def store(pg_url: str) -> Iterator[Store]:
    """This module's history is PostgreSQL with pgvector (the template has it)."""
    with Store(pg_url) as opened:
        assert opened.vectors.ranks_vectors
        yield opened


def recall_rows(engine, query: str, **params: object) -> list[dict[str, object]]:
    chosen = create_strategy("retrieval", {"recent": "2", **{k: str(v) for k, v in
                                                             params.items()}})
    return chosen.build(engine.request(query)).recall


def test_pgvector_recall_equals_the_numpy_ranking(make_engine, store: Store,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether the planner sorts the session's rows (as at this size) or walks the HNSW
    index (as on a large table; forced here), recall is the numpy path's, row for row, in
    hybrid and dense mode. One conversation for the four: which path ranks is decided at
    each recall, and the conversation was most of the time."""
    embedder = HashEmbedder(64)
    engine = make_engine("retrieval", embedder=embedder)
    run_conversation(engine, [*(mixed_line(i) for i in range(1, 41)), *ENGLISH_FILLER[:10],
                              *CHINESE_FILLER[:10]])
    engine.indexing.finish(embedder)
    for hnsw in (False, True):
        store.db.execute("SET enable_sort = off" if hnsw else "RESET enable_sort")
        for mode in ("hybrid", "dense"):
            by_database = {}
            with monkeypatch.context() as patch:
                # The database path (taken here from the first message) never reads every
                # vector.
                patch.setattr(recall_sources, "DATABASE_RANKING_FROM", 0)
                patch.setattr(store.vectors, "vector_batch", lambda *a,
                              **k: pytest.fail("read every vector"))
                for query in QUERIES:
                    by_database[query] = recall_rows(engine, query, mode=mode)
            with monkeypatch.context() as patch:
                patch.setattr(store.db, "ranks_vectors", False)
                for query in QUERIES:
                    by_numpy = recall_rows(engine, query, mode=mode)
                    asked = (query, mode, "hnsw" if hnsw else "planner")
                    assert any(r["kept"] and r["dense"] is not None for r in by_numpy), asked
                    # Every shown row: id, scores (words, dense, fused), kept or not and why.
                    assert by_database[query] == by_numpy, asked


def test_below_the_threshold_numpy_ranks_though_the_database_could(make_engine,
                                                                  store: Store) -> None:
    embedder = HashEmbedder(64)
    engine = make_engine("retrieval", embedder=embedder)
    run_conversation(engine, [mixed_line(i) for i in range(1, 11)])
    engine.indexing.finish(embedder)
    read: list[object] = []
    original = store.vectors.vector_batch

    def counted(*args: object, **kwargs: object) -> object:
        read.append(args)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    store.vectors.vector_batch = counted  # type: ignore[method-assign]
    rows = recall_rows(engine, QUERIES[0], mode="dense")
    assert read and any(r["dense"] is not None for r in rows)
    assert recall_sources.DATABASE_RANKING_FROM > 20


def test_the_database_path_counts_the_stored_vectors_in_one_read(
        make_engine, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    # Whether any vector is stored, and how many of the query's size, were two counts of
    # the session's vectors every build: each reads every stored row's (model, size).
    embedder = HashEmbedder(64)
    engine = make_engine("retrieval", embedder=embedder)
    run_conversation(engine, [mixed_line(i) for i in range(1, 11)])
    engine.indexing.finish(embedder)
    monkeypatch.setattr(recall_sources, "DATABASE_RANKING_FROM", 0)
    counts: list[str] = []
    original = store.db.execute

    def execute(sql: str, *args: object, **kwargs: object) -> object:
        if "count(*)" in sql and "message_vectors" in sql:
            counts.append(sql)
        return original(sql, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store.db, "execute", execute)
    part = engine.build_context(QUERIES[0]).part("recalled")
    assert len(counts) == 1
    # All twenty messages before the recent turn hold a vector of the query's size.
    assert part is not None and part.reason.embedded is None  # None: every one embedded
    assert any(r["dense"] is not None for r in recall_rows(engine, QUERIES[0]))
