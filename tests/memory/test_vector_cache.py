"""Vectors are cached by model and text: what was embedded once, in any session of the
history, is not embedded again (an import, a fork, a replay --save-as); erasing a text
erases its entries. Runs on every backend of the `store` fixture."""

from __future__ import annotations

from chatmem.embeddings.base import text_digest
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.memory.vector_backlog import VectorBacklog
from chatmem.memory.vector_rows import derived_context
from chatmem.store import Store

TEXTS = ["My sister moved to Lisbon in May.", "我妹妹五月搬到了里斯本。",
         "She works at a bakery there.", "What about the cat?"]


def conversation(store: Store, name: str, texts: list[str] = TEXTS) -> int:
    session = store.sessions.create_session(name, "retrieval")
    store.history.import_messages(session.id, [
        {"role": "user" if i % 2 == 0 else "assistant", "content": text}
        for i, text in enumerate(texts)])
    return session.id


def embed_all(store: Store, session_id: int, embedder: HashEmbedder) -> None:
    VectorBacklog(store, session_id, embedder, background=False).finish()


def vectors(store: Store, session_id: int, model: str) -> list[tuple[bytes, bytes]]:
    return [(v.vector, v.context_vector) for v in store.vectors.vector_rows(session_id, model)]


def test_the_same_conversation_again_embeds_nothing_and_gets_the_same_vectors(
        store: Store) -> None:
    embedder = HashEmbedder()
    first = conversation(store, "first")
    embed_all(store, first, embedder)
    assert embedder.calls == len(TEXTS)  # each text once: context vectors are derived
    second = conversation(store, "second")  # an import of the same history
    embed_all(store, second, embedder)
    assert embedder.calls == len(TEXTS)
    assert vectors(store, second, embedder.key) == vectors(store, first, embedder.key)
    assert store.vectors.count_without_vectors(embedder.key, second) == 0


def test_only_the_texts_never_seen_are_embedded(store: Store) -> None:
    embedder = HashEmbedder()
    embed_all(store, conversation(store, "first"), embedder)
    before = embedder.calls
    # Same first two messages, then a new one: only its own text is new (its context
    # vector is derived from its vector and the one before, which is found by its text).
    changed = [*TEXTS[:2], "She teaches piano now."]
    session = conversation(store, "changed", changed)
    embed_all(store, session, embedder)
    assert embedder.calls - before == 1
    import numpy as np

    fresh = HashEmbedder()
    own, previous = (np.asarray(v, dtype=np.float16).tobytes()
                     for v in fresh.embed([changed[2], changed[1]]))
    stored = store.vectors.vector_rows(session, embedder.key)[-1]
    assert stored.vector == own
    assert stored.context_vector == derived_context(own, previous)
    context = np.frombuffer(stored.context_vector, dtype=np.float16).astype(np.float32)
    assert abs(float(np.linalg.norm(context)) - 1) < 1e-2


def test_a_model_finds_only_its_own_vectors(store: Store) -> None:
    embed_all(store, conversation(store, "first"), HashEmbedder())
    other = HashEmbedder(dimensions=64)
    embed_all(store, conversation(store, "second"), other)
    assert other.calls == len(TEXTS)


def test_cached_vectors_are_found_by_the_digest_of_the_exact_text(store: Store) -> None:
    embedder = HashEmbedder()
    session = conversation(store, "first")
    embed_all(store, session, embedder)
    row = store.vectors.vector_rows(session, embedder.key)[1]
    found = store.vectors.cached_vectors(embedder.key, [
        text_digest(TEXTS[1]), text_digest(TEXTS[0]),
        text_digest(TEXTS[1] + " "), text_digest("never said")])
    assert found == {text_digest(TEXTS[1]): row.vector,
                     text_digest(TEXTS[0]): store.vectors.vector_rows(session,
                                                                      embedder.key)[0].vector}


def test_a_redacted_text_is_no_longer_found_and_a_deleted_session_takes_its_entries(
        store: Store) -> None:
    embedder = HashEmbedder()
    session = conversation(store, "first")
    embed_all(store, session, embedder)
    digests = [text_digest(t) for t in TEXTS]
    store.redactions.rewrite_stored_text([session], None, ["Lisbon"], lambda t: t.replace("Lisbon",
                                                                                          "…"))
    assert text_digest(TEXTS[0]) not in store.vectors.cached_vectors(embedder.key, digests)
    assert store.db.execute("SELECT count(*) FROM vector_cache").fetchone()[0] == 0
    embed_all(store, session, embedder)
    assert store.db.execute("SELECT count(*) FROM vector_cache").fetchone()[0] > 0
    store.sessions.delete_session("first")
    assert store.db.execute("SELECT count(*) FROM vector_cache").fetchone()[0] == 0
    assert store.vectors.cached_vectors(embedder.key, digests) == {}


def test_a_fork_copies_vectors_and_embeds_nothing(store: Store) -> None:
    embedder = HashEmbedder()
    session = conversation(store, "first")
    embed_all(store, session, embedder)
    calls = embedder.calls
    store.forks.fork_session("first", "copy")
    copy = store.sessions.session("copy").id
    embed_all(store, copy, embedder)
    assert embedder.calls == calls
    assert vectors(store, copy, embedder.key) == vectors(store, session, embedder.key)
