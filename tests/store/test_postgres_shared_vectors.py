"""A session another role owns lends the reader nothing of its vectors.

bob shares a session with ann for writing, ann chats and indexes there, then bob changes by
SQL the vectors of ann's messages in it (his session's): ann's private sessions embed her
text themselves, where before the vector cache handed them bob's vectors.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from cli_runner import invoke
from pg import PostgresServer

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.memory.vector_backlog import VectorBacklog
from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

READER, SHARER = "ann", "bob"
TEXTS = ["我妹妹五月搬到了里斯本。", "She works at a bakery there."]


@dataclass
class Team:
    server: PostgresServer
    database: str

    def url(self, role: str) -> str:
        return self.server.url(self.database, role)


@pytest.fixture
def team(pg_server: PostgresServer, pg_template: str) -> Iterator[Team]:
    name = pg_server.create_database(pg_template)
    yield Team(pg_server, name)
    pg_server.drop_database(name)


def conversation(store: Store, session_id: int, texts: list[str] = TEXTS) -> None:
    store.history.import_messages(session_id, [
        {"role": "user" if i % 2 == 0 else "assistant", "content": text}
        for i, text in enumerate(texts)])


def embed_all(store: Store, session_id: int, embedder: HashEmbedder) -> list[bytes]:
    VectorBacklog(store, session_id, embedder, background=False).finish()
    return [v.vector for v in store.vectors.vector_rows(session_id, embedder.key)]


def own_vector(text: str) -> bytes:
    return np.asarray(HashEmbedder().embed([text])[0], dtype=np.float16).tobytes()


def test_a_sharer_cannot_give_the_readers_private_messages_his_vectors(team: Team) -> None:
    ann, bob = team.url(READER), team.url(SHARER)
    with Store(bob) as store:
        shared = store.sessions.create_session("bobteam", "retrieval").id
    invoke("sessions", "share", "bobteam", "--with", READER, "--write", "--db", bob, code=0)
    embedder = HashEmbedder()
    with Store(ann) as store:  # ann writes and indexes in bob's session
        conversation(store, shared)
        embed_all(store, shared, embedder)
    assert embedder.calls == len(TEXTS)
    poison = own_vector("bob's words, not hers")
    with psycopg.connect(bob, autocommit=True) as conn:  # the reviewer's move
        assert conn.execute("UPDATE message_vectors SET vector = %s WHERE message_id IN"
                            " (SELECT id FROM messages WHERE session_id = %s)",
                            [poison, shared]).rowcount == len(TEXTS)
    with psycopg.connect(ann, autocommit=True) as conn:  # her entries, as chatmem wrote them
        conn.execute("INSERT INTO vector_cache (model, digest, message_id, context)"
                     " SELECT %s, encode(sha256(convert_to(content, 'UTF8')), 'hex'), id, 0"
                     " FROM messages WHERE session_id = %s ON CONFLICT DO NOTHING",
                     [embedder.key, shared])
        assert conn.execute("SELECT count(*) FROM vector_cache").fetchone()[0] == len(TEXTS)

    with Store(ann) as store:
        diary = store.sessions.create_session("日记", "retrieval").id
        conversation(store, diary)
        assert embed_all(store, diary, embedder) == [own_vector(t) for t in TEXTS]
        assert embedder.calls == 2 * len(TEXTS)  # embedded again: bob's are not reused
        # Her own sessions' vectors are still found again by their text.
        again = store.sessions.create_session("again", "retrieval").id
        conversation(store, again)
        assert embed_all(store, again, embedder) == [own_vector(t) for t in TEXTS]
        assert embedder.calls == 2 * len(TEXTS)

