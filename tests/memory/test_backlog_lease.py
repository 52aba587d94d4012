"""A chat leaves a backlog another live process holds the lease of (a background
`chatmem index`), picks up that process's vectors as they land, and goes on itself once
the lease is given back: no message is embedded twice."""

from __future__ import annotations

from conftest import History
from registered import open_session
from vectors import vector_models

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.engine import Engine
from chatmem.memory.vector_rows import embed_pending, save_rows
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render.toolbar import indexing_text
from chatmem.store import LeaseHolder, Store

SETTINGS = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="none"))
TURNS = 60
MESSAGES = 2 * TURNS
INDEXER = LeaseHolder(4242, "indexer-host.invalid")
"""The background indexer, on another host: only its lease says it runs."""


def imported(store: Store) -> int:
    """A session of TURNS imported turns, every text different (none found in the cache)."""
    session = store.sessions.create_session("imported", "retrieval", system="Be brief.")
    messages = []
    for n in range(TURNS):
        user, reply = ((f"我们第{n}次去杭州看西湖。", f"杭州的西湖很美，第{n}次。") if n % 3 == 0
                       else (f"Note {n}: my brother moved to Porto in year {2000 + n}.",
                             f"Porto it is, note {n}."))
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    store.history.import_messages(session.id, messages)
    return session.id


def chat(store: Store, embedder: HashEmbedder) -> Engine:
    return open_session(store, SETTINGS, ScriptedProvider(), "imported", strategy="retrieval",
                        embedder=embedder)


def test_a_chat_leaves_a_held_backlog_and_goes_on_when_it_is_given_back(
        store: Store, history: History) -> None:
    session_id = imported(store)
    embedder = HashEmbedder()
    key = embedder.key
    with history.open() as indexer:  # the indexer's own connection
        assert indexer.leases.take_index_lease(session_id, key, INDEXER) is None
    engine = chat(store, embedder)
    assert engine.run_turn("Where did my brother move?").status == "ok"
    status = engine.indexing.status(embedder)
    assert status is not None and status.elsewhere == INDEXER and not status.running
    assert indexing_text(status) == "indexing in process 4242"
    [left] = engine.indexing.close()
    assert (left.elsewhere, left.missing) == (INDEXER, MESSAGES + 2)
    assert embedder.calls == 0  # not one stored text embedded by the chat

    # The indexer stores half the backlog: the chat ranks it by meaning at once.
    half = MESSAGES // 2
    with history.open() as indexer:
        other = HashEmbedder()
        save_rows(indexer, key, embed_pending(
            other, indexer.vectors.texts_without_vectors(key, session_id, limit=half)))
        assert other.calls == half
        context = engine.build_context("我们什么时候去杭州？")
        reason = context.part("recalled").reason
        assert reason.embedded == half
        # It is killed before the end; its lease outlives it until it expires (here: given
        # back), and the chat goes on from where it stopped.
        indexer.leases.release_index_lease(session_id, key, INDEXER)
    assert engine.run_turn("And in which year?").status == "ok"
    assert engine.indexing.status(embedder).elsewhere is None
    engine.indexing.finish(embedder)
    # What the indexer left, once each, this chat's four messages included.
    assert embedder.calls == MESSAGES + 4 - half
    assert store.vectors.count_without_vectors(key, session_id) == 0
    assert vector_models(store) == {key: MESSAGES + 4}
    assert engine.indexing.close() == []
