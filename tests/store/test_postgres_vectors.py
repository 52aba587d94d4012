"""Vectors on PostgreSQL: pgvector (HNSW, cosine) finds the candidates numpy would rank best."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from pg import ROLES, PostgresServer, add_message, add_session

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.store import Store, VectorRow
from chatmem.store.postgres_backend import PostgresBackend

ENGLISH = ("my sister moved to Lisbon last spring", "the sourdough starter needs feeding",
           "our cat hides under the blue sofa", "I fixed the bicycle chain yesterday",
           "the quarterly report is due Friday", "we planted tomatoes and basil",
           "the train to Glasgow was delayed", "my doctor suggested more walking")
CHINESE = ("我姐姐去年春天搬到了里斯本", "酸面团需要每天喂养", "我们的猫躲在蓝色沙发下面",
           "我昨天修好了自行车链条", "季度报告周五到期", "我们种了西红柿和罗勒",
           "去格拉斯哥的火车晚点了", "医生建议我多走路")
QUERIES = ("where does my sister live", "report deadline", "猫在哪里", "火车晚点", "tomatoes")


def conversation(seed: int, lines: tuple[str, ...], count: int) -> list[str]:
    """Messages mixing a topic line with words of others, so few vectors tie."""
    rng = random.Random(seed)
    words = [w for line in lines for w in (line.split() if " " in line else
                                           [line[i : i + 2] for i in range(0, len(line), 2)])]
    return [" ".join([rng.choice(lines), *rng.sample(words, rng.randint(1, 4))])
            for _ in range(count)]


def halves(embedder: HashEmbedder, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Own and context vectors as the backlog stores them (float16)."""
    own = embedder.embed(texts)
    context = embedder.embed([f"{a}\n{b}" for a, b in zip(["", *texts[:-1]], texts,
                                                               strict=True)])
    return own.astype(np.float16), context.astype(np.float16)


def store_session(backend: PostgresBackend, store: Store, embedder: HashEmbedder, name: str,
                  texts: list[str]) -> tuple[int, np.ndarray, np.ndarray]:
    session_id = add_session(backend, name)
    ids = [add_message(backend, session_id, position, text)
           for position, text in enumerate(texts, 1)]
    own, context = halves(embedder, texts)
    store.vectors.save_vectors(embedder.key, embedder.dimensions, [
        VectorRow(i, o.tobytes(), c.tobytes()) for i, o, c in zip(ids, own, context,
                                                                  strict=True)])
    return session_id, own, context


def best_scores(rows: np.ndarray, query: np.ndarray, own: np.ndarray, context: np.ndarray,
                limit: int) -> list[float]:
    """The `limit` best scores (the larger cosine, as recall ranks) among `rows`: compared
    as values, since which of two equal vectors comes back is the index's choice."""
    raw = np.maximum(own[rows].astype(np.float32) @ query,
                     context[rows].astype(np.float32) @ query)
    return [round(float(s), 5) for s in sorted(raw, reverse=True)[:limit]]


@pytest.mark.parametrize("hnsw", [False, True], ids=["planner", "hnsw"])
@pytest.mark.parametrize("lines", [ENGLISH, CHINESE], ids=["english", "chinese"])
def test_database_candidates_hold_numpys_top_k(pg_url: str, lines: tuple[str, ...],
                                               hnsw: bool) -> None:
    """At this size the planner sorts the session's rows (exact); forced onto the HNSW
    index, as on a large table, the search must find the same best candidates."""
    embedder = HashEmbedder(64)
    with PostgresBackend(pg_url) as backend, Store(pg_url) as store:
        assert backend.ranks_vectors
        if hnsw:
            backend.execute("SET enable_sort = off")
        session_id, own, context = store_session(backend, store, embedder, "talk",
                                                 conversation(1, lines, 240))
        store_session(backend, store, embedder, "other", conversation(2, lines, 120))
        for text in QUERIES:
            query = embedder.embed([text], query=True)[0]
            for last, limit in ((240, 10), (240, 60), (150, 25)):
                found = backend.nearest_vectors(embedder.key, embedder.dimensions,
                                                session_id, last, query.tolist(), limit)
                assert found is not None and all(1 <= p <= last for p in found)
                assert len(found) <= 2 * limit
                assert best_scores(np.array(found) - 1, query, own, context, limit) == (
                    best_scores(np.arange(last), query, own, context, limit))
        # The HNSW indexes of that dimension were made by the first search, and serve it.
        ran: list[tuple[str, object]] = []
        backend.observe = lambda sql, params, cursor: ran.append((sql, params))
        backend.nearest_vectors(embedder.key, embedder.dimensions, session_id, 240,
                                query.tolist(), 10)
        backend.observe = None
        plans = [" ".join(r[0] for r in backend.execute(f"EXPLAIN {sql}", params))
                 for sql, params in ran if "<=>" in sql]
        assert len(plans) == 2
        assert ("Index Scan using message_vectors_embedding_64" in plans[0]) is hnsw
        assert ("Index Scan using message_vectors_context_embedding_64" in plans[1]) is hnsw


def test_the_copies_hold_the_stored_float16_values_exactly(pg_url: str) -> None:
    values = np.array([0.5, -0.25, 1e-7, -6e-8, 65504, 0, -0.0, 0.333], dtype=np.float16)
    embedder = HashEmbedder(8)
    with PostgresBackend(pg_url) as backend, Store(pg_url) as store:
        session_id = add_session(backend)
        message_id = add_message(backend, session_id, 1, "hello")
        store.vectors.save_vectors(embedder.key, 8, [VectorRow(message_id, values.tobytes(),
                                                               values[::-1].tobytes())])
        own, context = backend.execute(
            "SELECT embedding::real[], context_embedding::real[] FROM message_vectors"
            ).fetchone()
        # real[] comes back as shortest decimals: equal once read as float32.
        assert np.array(own, np.float32).tobytes() == values.astype(np.float32).tobytes()
        assert (np.array(context, np.float32).tobytes()
                == values[::-1].astype(np.float32).tobytes())
        # A rewrite (a redaction re-embeds) replaces the copies too.
        store.vectors.save_vectors(embedder.key, 8, [VectorRow(message_id, values[::-1].tobytes(),
                                                               values.tobytes())])
        assert backend.execute("SELECT embedding::real[] FROM message_vectors"
                               ).fetchone()[0] == context


def test_without_pgvector_recall_keeps_ranking_in_numpy(pg_server: PostgresServer) -> None:
    """A role that may not create the extension (it is not a trusted one) migrates the
    database without it, and nothing says so: the numpy path is the normal one."""
    name = pg_server.create_database()
    try:
        with pg_server.admin(name) as conn:
            conn.execute(f"ALTER SCHEMA public OWNER TO {ROLES[0]}")
        url = pg_server.url(name, ROLES[0])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with PostgresBackend(url) as backend:
                assert not backend.ranks_vectors
                assert not backend.has_column("message_vectors", "embedding")
                assert "p002_vectors" in {r[0] for r in backend.execute(
                    "SELECT name FROM chatmem_migrations")}
                session_id = add_session(backend)
                add_message(backend, session_id, 1, "hello")
                assert backend.nearest_vectors("hash:8", 8, session_id, 1, [1.0] * 8, 5) is None
    finally:
        pg_server.drop_database(name)


@pytest.mark.parametrize(("dimensions", "blob"), [
    (3, b"\x00\x01\xff"),                      # odd length
    (2, b"\x00\x3c"),                          # not as long as its dimensions say
    (2, b"\x00\x7c\x00\x3c"),                  # an infinity: pgvector takes none
    (0, b""),
], ids=["odd", "short", "infinity", "empty"])
def test_a_blob_that_is_no_float16_vector_is_stored_without_a_copy(
        pg_backend: PostgresBackend, dimensions: int, blob: bytes) -> None:
    session_id = add_session(pg_backend)
    message_id = add_message(pg_backend, session_id, 1, "hello")
    with pg_backend.write():
        pg_backend.execute("INSERT INTO message_vectors (message_id, model, dimensions, vector,"
                           " context_vector) VALUES (?, 'm', ?, ?, ?)",
                           [message_id, dimensions, blob, blob])
    assert tuple(pg_backend.execute(
        "SELECT vector, embedding, context_embedding FROM message_vectors").fetchone()) == (
        blob, None, None)
    assert pg_backend.nearest_vectors("m", 2, session_id, 1, [1.0, 0.0], 5) == []
