"""Recall reads a session's vectors from the store once, then only what turns added: the
array it keeps has room to grow, so a turn's new vectors never copy the ones it holds.
Runs on every backend of the `store` fixture. The engines of one session in one process
(a server's kept conversations: recording, reading, searching) hold one copy of them
between them, and each still sees what another connection erased, hid or added (SQLite
files)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from registered import open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.engine import Engine
from chatmem.memory.indexing import Indexing
from chatmem.memory.recall_sources import StoredRecall
from chatmem.memory.recall_vectors import Vectors
from chatmem.memory.state import SessionState
from chatmem.memory.vector_backlog import VectorBacklog
from chatmem.providers.scripted import ScriptedProvider
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


# -- one copy per process: engines of one session share what they read (SQLite) --------------

SAID = ["My friend José lives in Porto near the river.", "We sailed to the islands in May.",
        "José 住在波尔图，靠近河边。", "The blue boat was rented for 300 euros.",
        "我们五月去杭州，订了西湖边的酒店。", "José cooks bacalhau every Sunday."]


def kept_engine(store: Store, name: str = "kept") -> Engine[Store]:
    """An engine as a server keeps one open: its vectors embedded inline, so what is stored
    does not depend on a thread's timing."""
    settings = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="none"))
    engine = open_session(store, settings, ScriptedProvider(), name, strategy="retrieval",
                          embedder=HashEmbedder())
    engine.background_indexing = False
    engine.indexing = Indexing(store, engine.session.id, background=False)
    return engine


def recorded_engine(store: Store) -> Engine[Store]:
    """A kept engine that has recorded the turns of SAID."""
    engine = kept_engine(store)
    for text in SAID:
        engine.run_turn(text)
    return engine


def held(engine: Engine[Store], count: int) -> Vectors:
    """What recall of `engine` ranks the first `count` messages by, as a build reads it."""
    embedder = engine.embedder
    assert embedder is not None
    return StoredRecall(engine.state, counter_for_model(None), 6.0, embedder).vectors(count)


def stored(store: Store, session_id: int) -> dict[int, np.ndarray]:
    return {row.position: np.frombuffer(row.vector, np.float16).astype(np.float32)
            for row in store.vectors.vector_rows(session_id, HashEmbedder().key)}


def same_as_stored(vectors: Vectors, rows: dict[int, np.ndarray]) -> bool:
    """`vectors` hold exactly the stored rows, and mark absent the others."""
    return (vectors.count == len(rows) and bool(np.array_equal(
        np.flatnonzero(vectors.present) + 1, sorted(rows)))
        and all(np.array_equal(vectors.own[p - 1], v) for p, v in rows.items()))


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Store, Store, Store]]:
    """Two connections to one history file, as a server's kept conversations hold, and a
    third, another process's."""
    with Store(tmp_path / "h.db") as a, Store(tmp_path / "h.db") as b, \
            Store(tmp_path / "h.db") as other:
        yield a, b, other


def test_engines_of_one_session_hold_one_copy_of_its_vectors_and_see_new_turns(
        two: tuple[Store, Store, Store]) -> None:
    a_store, b_store, _ = two
    recording = recorded_engine(a_store)
    reading = kept_engine(b_store)
    count = 2 * len(SAID)
    recorded, read = held(recording, count), held(reading, count)
    assert np.shares_memory(recorded.own, read.own)  # one copy, not one per engine
    assert same_as_stored(read, stored(b_store, reading.session.id))

    recording.run_turn("我们还去了里斯本。")  # a new turn: the other engine sees its vectors
    reading.follow_erasures()
    after = held(reading, count + 2)
    assert same_as_stored(after, stored(b_store, reading.session.id))
    assert after.count == count + 2


def test_a_purge_by_another_connection_is_never_read_from_a_copy_an_engine_still_holds(
        two: tuple[Store, Store, Store]) -> None:
    a_store, b_store, other = two
    recording = recorded_engine(a_store)
    count = 2 * len(SAID)
    before = held(recording, count)  # the recording engine holds every vector
    assert before.count == count
    sid = recording.session.id
    other.redactions.rewrite_stored_text([sid], None, ["José"],
                                         lambda text: text.replace("José", "[erased]"))
    # Opened after the purge, while the recording engine has not looked yet: it reads the
    # history as it is (the purge took every vector of the session), not that engine's copy.
    reading = kept_engine(b_store)
    assert same_as_stored(held(reading, count), {})
    recording.follow_erasures()
    assert same_as_stored(held(recording, count), {})
    assert before.count == count  # what was handed before stays as it was handed
    reading.indexing.finish(reading.embedder)  # embedded again, from the rewritten texts
    again = stored(other, sid)
    assert len(again) == count
    assert same_as_stored(held(recording, count), again)
    assert same_as_stored(held(reading, count), again)


def test_a_hidden_turn_leaves_the_vectors_of_engines_that_follow_it(
        two: tuple[Store, Store, Store]) -> None:
    a_store, b_store, other = two
    recording = recorded_engine(a_store)
    reading = kept_engine(b_store)
    count = 2 * len(SAID)
    sid = recording.session.id
    assert held(reading, count).count == count
    hidden = other.turns.hide_turn(sid)  # a regenerate by another process
    fresh = kept_engine(other)  # opened after it, while the first two have not looked
    assert same_as_stored(held(fresh, count), stored(other, sid))
    assert held(fresh, count).count == count - 2
    for engine in (recording, reading):
        engine.follow_erasures()
        assert same_as_stored(held(engine, count), stored(other, sid))
    other.turns.show_turn(hidden)
    for engine in (recording, reading, fresh):
        engine.follow_erasures()
        assert held(engine, count).count == count


def test_vectors_stored_for_rows_already_handed_out_leave_them_as_handed(
        two: tuple[Store, Store, Store]) -> None:
    a_store, b_store, other = two
    recording = recorded_engine(a_store)
    reading = kept_engine(b_store)
    sid = recording.session.id
    count = 2 * len(SAID)
    # Another writer adds a turn; it is counted before it is embedded.
    other.history.import_messages(sid, [{"role": "user", "content": "第七条：包裹寄到了杭州"},
                                        {"role": "assistant", "content": "Noted: Hangzhou."}])
    handed = held(reading, count + 2)
    assert handed.count == count
    shown = handed.own.copy(), handed.present.copy(), handed.links.copy()
    Indexing(other, sid, background=False).finish(HashEmbedder())
    seen = held(recording, count + 2)
    assert same_as_stored(seen, stored(other, sid))
    assert seen.count == count + 2
    # The reading engine may still be ranking by what it was handed, on its own thread.
    assert np.array_equal(handed.own, shown[0])
    assert np.array_equal(handed.present, shown[1])
    assert np.array_equal(handed.links, shown[2])
    assert same_as_stored(held(reading, count + 2), stored(other, sid))
