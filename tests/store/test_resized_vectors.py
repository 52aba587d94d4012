"""Vectors stored in another size than the embedder now gives (one that changed under the same
key): read as missing, not found again by their text, and replaced in place when embedded
again, on SQLite and PostgreSQL (pgvector's copies and per-size indexes follow)."""

from __future__ import annotations

import numpy as np

from chatmem.embeddings.base import text_digest
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.memory.vector_rows import derived_context, embed_pending, save_rows
from chatmem.store import Store

MODEL = "grams:bigram"
TEXTS = ["my cat is called Mimi", "Noted.", "我们五月去杭州旅行", "好的"]


def stored_at(store: Store, size: int) -> tuple[int, list[int]]:
    session = store.sessions.create_session("s", "retrieval")
    ids = store.history.import_messages(session.id, [
        {"role": "user" if i % 2 == 0 else "assistant", "content": t}
        for i, t in enumerate(TEXTS)])
    save_rows(store, MODEL, embed_pending(_Sized(size), store.vectors.texts_without_vectors(
        MODEL, session.id, dimensions=size)))
    return session.id, ids


class _Sized:
    """The hash embedder under one key whatever its size, as a plugin's new version may be."""

    key = MODEL

    def __init__(self, dimensions: int) -> None:
        self.inner = HashEmbedder(dimensions)
        self.dimensions = dimensions

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        return self.inner.embed(texts, query=query)


def test_vectors_of_another_size_are_missing_and_not_found_again(store: Store) -> None:
    session_id, ids = stored_at(store, 64)
    vectors = store.vectors
    assert vectors.count_without_vectors(MODEL, session_id, dimensions=64) == 0
    assert vectors.count_without_vectors(MODEL, session_id, dimensions=96) == 4
    assert vectors.count_without_vectors(MODEL, session_id) == 0  # size not known yet
    assert [p.message_id for p in vectors.texts_without_vectors(MODEL, dimensions=96)] == ids
    assert vectors.sessions_without_vectors(MODEL, 96) == [session_id]
    assert vectors.stale_vectors(MODEL, 96, session_id) == {64: 4}
    assert vectors.stale_vectors(MODEL, 64) == {}
    digest = text_digest(TEXTS[2])
    assert len(vectors.cached_vectors(MODEL, [digest], 64)[digest]) == 128
    assert vectors.cached_vectors(MODEL, [digest], 96) == {}
    assert vectors.vector_batch(session_id, MODEL, dimensions=96).positions == []
    assert vectors.vector_batch(session_id, MODEL, dimensions=64).positions == [1, 2, 3, 4]


def test_a_small_sessions_stale_vectors_are_counted_alike_beside_a_large_one(
        store: Store) -> None:
    """A session holding a small share of the file is read from its own messages (an open
    read every vector of the model in the file): the counts are the same either way."""
    small, _ = stored_at(store, 64)
    large = store.sessions.create_session("large", "retrieval")
    store.history.import_messages(large.id, [{"role": "user", "content": f"第{i}条 note {i}"}
                                             for i in range(40)])
    save_rows(store, MODEL, embed_pending(_Sized(32), store.vectors.texts_without_vectors(
        MODEL, large.id, dimensions=32)))
    vectors = store.vectors
    assert vectors.stale_vectors(MODEL, 96, small) == {64: 4}  # from its messages
    assert vectors.stale_vectors(MODEL, 96, large.id) == {32: 40}  # from the vectors
    assert vectors.stale_vectors(MODEL, 64, small) == {}
    assert vectors.stale_vectors(MODEL, 96) == {32: 40, 64: 4}


def test_embedded_again_they_replace_the_old_ones(store: Store) -> None:
    session_id, _ = stored_at(store, 64)
    pending = store.vectors.texts_without_vectors(MODEL, session_id, dimensions=96)
    save_rows(store, MODEL, embed_pending(_Sized(96), pending))
    assert store.vectors.stale_vectors(MODEL, 96) == {}
    assert store.vectors.count_without_vectors(MODEL, dimensions=96) == 0
    batch = store.vectors.vector_batch(session_id, MODEL, dimensions=96)
    assert (batch.positions, len(batch.vectors)) == ([1, 2, 3, 4], 4 * 96 * 2)
    if store.vectors.ranks_vectors:  # pgvector: the copies are the new size, and ranked
        query = HashEmbedder(96).embed(["我们五月去杭州"], query=True)[0].tolist()
        assert 3 in (store.vectors.nearest_positions(session_id, MODEL, 96, 4, query, 1) or [])
        assert store.vectors.nearest_positions(session_id, MODEL, 64, 4, query[:64], 4) == []


def test_a_context_is_not_summed_with_a_vector_of_another_size() -> None:
    """(It raised `operands could not be broadcast together`, and `chatmem index` showed it
    as a traceback.)"""
    own = np.eye(96, dtype=np.float16)[0].tobytes()
    before = np.eye(64, dtype=np.float16)[1].tobytes()
    assert derived_context(own, before) == derived_context(own, None) == own
