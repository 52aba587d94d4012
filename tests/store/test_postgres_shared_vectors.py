"""A session another role owns lends the reader nothing of its vectors, and what a write share
lets its grantee change of the owner's messages and turns is what chatmem needs, no more.

bob shares a session with ann for writing, ann chats and indexes there, then bob changes by
SQL the vectors of ann's messages in it (his session's): ann's private sessions embed her
text themselves, where before the vector cache handed them bob's vectors. And ann, by SQL,
may no longer rewrite or delete bob's messages and turns; her /retry there still works.
"""

from __future__ import annotations

import numpy as np
import pytest
from cli_runner import invoke
from grantees import INSUFFICIENT_PRIVILEGE, sql_as
from pg import PostgresServer, Team, migrated_before
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.engine.resend import resend_last
from chatmem.errors import StoreError
from chatmem.memory.vector_backlog import VectorBacklog
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store, TurnStatus

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

READER, SHARER = "ann", "bob"
TEXTS = ["我妹妹五月搬到了里斯本。", "She works at a bakery there."]


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





def test_a_write_share_lets_its_grantee_add_turns_not_rewrite_or_delete_them(
        team: Team) -> None:
    ann, bob = team.url(READER), team.url(SHARER)
    with Store(bob) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "bobteam")
        engine.run_turn("我们周五在杭州开会")
        shared = engine.session.id
    invoke("sessions", "share", "bobteam", "--with", READER, "--write", "--db", bob, code=0)
    with Store(ann) as store:  # ann adds a turn, and replaces it (/retry)
        engine = open_session(store, Settings(), ScriptedProvider(), "bob/bobteam")
        engine.run_turn("会议改到周六")
        assert resend_last(engine).status == TurnStatus.OK
        # A purge masks fact lines of its context, nothing else (test_postgres_grantee_writes).
        last = store.turns.turn(shared)
        with pytest.raises(StoreError, match="only where a purge masks a fact"):
            store.facts.rewrite_turn_context(last.id, {**last.context, "masked": True},
                                             last.rendered_prompt)
    before = team.rows("SELECT id, content, superseded FROM messages ORDER BY id")
    assert len(before) == 6

    # The reviewer's moves: the owner's messages and turns, rewritten or deleted by SQL.
    for sql in ("UPDATE messages SET content = '改过了' WHERE session_id = %s",
                "UPDATE messages SET role = 'assistant' WHERE session_id = %s",
                "UPDATE turns SET input = '改过了', reply = '改过了' WHERE session_id = %s"):
        assert sql_as(ann, sql, [shared]) == INSUFFICIENT_PRIVILEGE, sql
    for sql in ("DELETE FROM messages WHERE session_id = %s",
                "DELETE FROM turns WHERE session_id = %s"):
        assert sql_as(ann, sql, [shared]) == 0, sql
    assert team.rows("SELECT id, content, superseded FROM messages ORDER BY id") == before
    assert [n for n, in team.rows("SELECT number FROM turns ORDER BY number")] == [1, 2, 3]

    # The owner still changes his session, and deletes it with all it holds.
    assert sql_as(bob, "UPDATE messages SET content = '改过了' WHERE session_id = %s"
                       " AND position = 1", [shared]) == 1
    invoke("sessions", "delete", "bobteam", "--yes", "--db", bob, code=0)
    assert team.rows("SELECT count(*) FROM messages") == [(0,)]


def test_the_owner_deletes_what_his_session_holds_where_a_person_owns_the_tables(
        pg_server: PostgresServer) -> None:
    """A foreign key's action (a turn's message set to NULL) runs as the tables' owner, who
    is no superuser here: p015's check lets it through."""
    from chatmem.store.postgres_backend import PostgresBackend

    with migrated_before(pg_server) as old:
        database, keeper = old.database, old.keeper
        PostgresBackend(pg_server.url(database, keeper)).close()
        ann, bob = pg_server.url(database, READER), pg_server.url(database, SHARER)
        with Store(bob) as store:
            open_session(store, Settings(), ScriptedProvider(), "bobteam").run_turn("hi")
        invoke("sessions", "share", "bobteam", "--with", READER, "--write", "--db", bob, code=0)
        with Store(ann) as store:
            open_session(store, Settings(), ScriptedProvider(), "bob/bobteam").run_turn("你好")
        assert sql_as(bob, "DELETE FROM messages WHERE turn = 2") == 2  # the owner's right
        invoke("sessions", "delete", "bobteam", "--yes", "--db", bob, code=0)
        with pg_server.admin(database) as conn:
            assert conn.execute("SELECT count(*) FROM turns").fetchone() == (0,)
