"""What the backlog reads of a session whose messages all have their vectors: its first look
reads the session once, in its messages' order, closing counts only past what it found done,
and a vector dropped by another process is still found by the next one."""

from __future__ import annotations

import re

import pytest
from conftest import History
from meter import metered
from registered import open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.memory.vector_backlog import VectorBacklog
from chatmem.memory.vector_rows import embed_pending, save_rows
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

SETTINGS = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="none"))
TURNS = 200
MESSAGES = 2 * TURNS


def embedded_session(store: Store, embedder: HashEmbedder) -> int:
    """A session of TURNS turns, English and Chinese, every message with its vector."""
    session = store.sessions.create_session("indexed", "retrieval", system="Be brief.")
    messages = []
    for n in range(TURNS):
        user = "我们下个月去杭州看西湖。" if n == 23 else f"Note {n}: the bus timetable again."
        messages += [{"role": "user", "content": user},
                     {"role": "assistant", "content": f"Noted, item {n}."}]
    store.history.import_messages(session.id, messages)
    save_rows(store, embedder.key, embed_pending(embedder, store.vectors.texts_without_vectors(
        embedder.key, session.id, dimensions=embedder.dimensions)))
    return session.id


def test_closing_counts_only_past_what_the_process_found_done(history: History) -> None:
    embedder = HashEmbedder()
    with history.open() as store:
        session_id = embedded_session(store, embedder)
        engine = open_session(store, SETTINGS, ScriptedProvider(), "indexed",
                              strategy="retrieval", embedder=embedder)
        engine.run_turn("我们什么时候去杭州？")
        engine.indexing.finish(embedder)  # the turn's two messages
        with metered(store) as meter:
            assert engine.indexing.close() == []  # nothing left
        if history.kind != "postgres":
            # The session's 400 messages are not looked at again (about 7,000 VM
            # instructions): 2 s of CPU at 100,000 messages, at every ask.
            assert meter.steps < MESSAGES // 20
        assert store.vectors.count_without_vectors(embedder.key, session_id) == 0


def test_a_vector_another_process_dropped_is_found_by_the_next_process(
        history: History) -> None:
    embedder = HashEmbedder()
    with history.open() as store:
        session_id = embedded_session(store, embedder)
        first = store.history.messages(session_id)[46]
        backlog = VectorBacklog(store, session_id, embedder)
        backlog.after_commit()  # finds every vector there
        with history.open() as other:  # as a purge's: this process does not see it
            other.db.execute("DELETE FROM message_vectors WHERE message_id = ?", [first.id])
        with metered(store) as meter:
            assert backlog.close().missing == 0
        if history.kind != "postgres":
            assert meter.steps < MESSAGES // 20
    with history.open() as store:  # the next process reads the session from its start
        backlog = VectorBacklog(store, session_id, embedder, background=False)
        backlog.after_commit()
        assert backlog.status().missing == 0
        assert store.vectors.count_without_vectors(embedder.key, session_id) == 0
        stored = store.vectors.vectors_at(session_id, embedder.key, [first.position])
        assert [v.message_id for v in stored] == [first.id]


class _Unsized(HashEmbedder):
    """An endpoint's embedder: its size is known from its first answer (0 until then)."""

    def __init__(self) -> None:
        super().__init__(96)
        self.key, self.dimensions = "endpoint:e5", 0

    def embed(self, texts, *, query: bool = False):  # type: ignore[no-untyped-def]
        self.dimensions = 96
        return super().embed(texts, query=query)


def test_vectors_found_done_before_the_size_was_known_are_counted_again(store: Store) -> None:
    """A look made while the embedder's size was not known took a vector of any size for
    done: once the size is known, closing counts the whole session again, and those of
    another size are missing."""
    embedder = _Unsized()
    session_id = embedded_session(store, HashEmbedder(64))
    store.db.execute("UPDATE message_vectors SET model = ?", [embedder.key])
    backlog = VectorBacklog(store, session_id, embedder)
    backlog.after_commit()  # size 0: every vector counts
    assert backlog.status().missing == 0
    embedder.embed(["hello"], query=True)  # a build's query: the size is 96 now
    assert backlog.close().missing == MESSAGES


@pytest.mark.sqlite_only  # SQLite's query plans
def test_the_first_look_reads_the_session_in_its_messages_order(history: History) -> None:
    """Through the session's (session_id, position) index the vectors are looked up in
    about their key's order: through its index by gap they were looked up all over the
    table (1.9 s of CPU at 100,000 messages, against 0.4 s)."""
    embedder = HashEmbedder()
    with history.open() as store:
        session_id = embedded_session(store, embedder)
        backlog = VectorBacklog(store, session_id, embedder)
        ran: list[str] = []
        store.db.conn.set_trace_callback(ran.append)
        backlog.after_commit()
        store.db.conn.execute("DELETE FROM message_vectors WHERE message_id IN"
                              " (SELECT id FROM messages ORDER BY id DESC LIMIT 2)")
        backlog.abandon()
        VectorBacklog(store, session_id, embedder).close()  # a close with no look before
        store.db.conn.set_trace_callback(None)
        looks = [sql for sql in ran if "NOT EXISTS (SELECT 1 FROM message_vectors" in sql]
        assert len(looks) == 2
        for sql in looks:
            plan = [row[3] for row in store.db.conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
            assert any(re.search(r"SEARCH m USING INDEX \w+ \(session_id=\? AND position>\?\)",
                                 step) for step in plan), plan
