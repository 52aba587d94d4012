"""Recall reads a session's vectors from the store once, then only what turns added: the
array it keeps has room to grow, so a turn's new vectors never copy the ones it holds.
Runs on every backend of the `store` fixture."""

from __future__ import annotations

import tracemalloc

import numpy as np

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.memory.recall_sources import StoredRecall
from chatmem.memory.state import SessionState
from chatmem.memory.vector_backlog import VectorBacklog
from chatmem.store import Store
from chatmem.tokens import counter_for_model

HELD = 2_000


def said(first: int, count: int) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant",
             "content": f"message {i}: the parcel went to Porto" if i % 3
             else f"第{i}条：包裹寄到了杭州"}
            for i in range(first, first + count)]


def test_a_turns_new_vectors_do_not_copy_the_ones_already_held(store: Store) -> None:
    embedder = HashEmbedder()
    session = store.sessions.create_session("long", "retrieval")
    store.history.import_messages(session.id, said(0, HELD))
    VectorBacklog(store, session.id, embedder, background=False).finish()
    recall = StoredRecall(SessionState(store, session.id), counter_for_model(None), 6.0,
                          embedder)
    first = recall.vectors(HELD)
    assert first.count == HELD
    stored = store.vectors.vector_rows(session.id, embedder.key)
    assert [row.position for row in stored] == list(range(1, HELD + 1))
    assert np.array_equal(first.own, np.stack(
        [np.frombuffer(row.vector, np.float16) for row in stored]).astype(np.float32))
    held = first.own.copy()

    store.history.import_messages(session.id, said(HELD, 2))  # one more turn
    VectorBacklog(store, session.id, embedder, background=False).finish()
    tracemalloc.start()
    try:
        second = recall.vectors(HELD + 2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Copying the held rows into a larger array would allocate all of them again.
    assert peak < held.nbytes / 10
    assert second.count == HELD + 2
    assert np.array_equal(second.own[:HELD], held)
    expected = embedder.embed([m["content"] for m in said(HELD, 2)])
    assert np.allclose(second.own[HELD:], expected, atol=1e-3)  # stored as float16
