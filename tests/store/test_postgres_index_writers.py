"""Who wrote a message's word entry and vectors, as the server says it (p027): the role that
inserted or changed the row, whatever its statement names. A reader trusts an entry only as
it or the session's owner wrote it; any other reads as missing (and is indexed again). An
older database upgrades to it losing nothing, its entries read as before; a database so
upgraded is refused by an older chatmem, as any newer one is."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from grantees import shared_session, sql_as
from matches import match_scores
from pg import NOW, OldHistory, PostgresServer, add_messages, migrated_before, older_chatmem_refuses

from chatmem import fts
from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

P027 = "p027_recall_index_says_who_wrote_it"
WORDS = "SELECT message_id, session_id, terms::text, tokens, owner FROM message_words ORDER BY 1"
VECTORS = ("SELECT message_id, model, dimensions, vector, context_vector, owner"
           " FROM message_vectors ORDER BY 1")
SAID = ["我叫安娜，住在杭州。", "好的，安娜。", "杭州的西湖很美。", "记下了：杭州。"]
QUESTION = "我住在杭州吗？"


@pytest.fixture
def before_p027(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P027) as old:
        yield old


def index(url: str, session_id: int, message_id: int, text: str, seen: float) -> None:
    """`url`'s role writes the message's word entry (of `text`) and its vector (`seen`)."""
    vector = struct.pack("<2e", seen, 1.0)
    assert sql_as(url, "INSERT INTO message_words (message_id, session_id, terms, tokens)"
                       " VALUES (%s, %s, to_tsvector('english', %s), 3) ON CONFLICT (message_id)"
                       " DO UPDATE SET terms = excluded.terms",
                  [message_id, session_id, fts.message_index_text("user", text)]) == 1
    assert sql_as(url, "INSERT INTO message_vectors (message_id, model, dimensions, vector,"
                       " context_vector) VALUES (%s, 'hash', 2, %s, %s) ON CONFLICT"
                       " (model, message_id) DO UPDATE SET vector = excluded.vector",
                  [message_id, vector, vector]) == 1


def read(url: str, session_id: int) -> tuple[list[int], dict[int, bytes]]:
    """The positions a search of QUESTION finds, and each message's vector by position, as
    `url`'s role reads them."""
    with Store(url) as store:
        found = sorted(match_scores(store, session_id, QUESTION, before_turn=9, limit=9))
        vectors = {v.position: bytes(v.vector) for v in store.vectors.vector_rows(session_id,
                                                                                 "hash")}
        assert sorted(vectors) == sorted(v.position for v in store.vectors.vectors_at(
            session_id, "hash", range(1, 9)))
        return found, vectors


def test_an_older_databases_index_reads_as_before_and_new_entries_say_who(
        before_p027: OldHistory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p027
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann, "retrieval")
    ids = add_messages(ann, session_id, SAID)
    for message_id, said in zip(ids[:3], SAID, strict=False):
        index(ann, session_id, message_id, said, 0.5)
    index(bob, session_id, ids[3], SAID[3], 0.25)  # before p027: read as before
    with old.server.admin(old.database) as conn:
        stored = conn.execute(WORDS).fetchall(), conn.execute(VECTORS).fetchall()

    PostgresBackend(old.url(old.keeper)).close()

    with old.server.admin(old.database) as conn:
        assert (conn.execute(WORDS).fetchall(), conn.execute(VECTORS).fetchall()) == stored
        for table in ("message_words", "message_vectors"):
            assert conn.execute(f"SELECT DISTINCT writer FROM {table}").fetchall() == [(None,)]
    before = read(ann, session_id)
    assert before[0] == [1, 3, 4] and sorted(before[1]) == [1, 2, 3, 4]
    assert read(bob, session_id) == before
    # From now on an entry he changes is his: not hers (missing), his own to read.
    index(bob, session_id, ids[0], "猫", 0.125)
    mine, his = read(ann, session_id), read(bob, session_id)
    assert mine[0] == [3, 4] and sorted(mine[1]) == [2, 3, 4]
    assert his[0] == [3, 4] and his[1][1] == struct.pack("<2e", 0.125, 1.0)
    # He cannot name her as its writer.
    for table in ("message_words", "message_vectors"):
        assert sql_as(bob, f"UPDATE {table} SET writer = 'ann'") == "42501"
    assert sql_as(bob, "INSERT INTO message_vectors (message_id, model, dimensions, vector,"
                       " context_vector, writer) VALUES (%s, 'other', 2, %s, %s, 'ann')",
                  [ids[1], b"\0\0\0\0", b"\0\0\0\0"]) == "42501"
    # Her next look indexes his entry's message again, as hers, which he reads too.
    with Store(ann) as store:
        assert store.recall.index_untrusted_words(session_id) == ids[3]
        assert store.recall.index_untrusted_words(session_id, ids[3]) == ids[3]
    assert read(ann, session_id)[0] == before[0] == read(bob, session_id)[0]
    with old.server.admin(old.database) as conn:
        assert conn.execute("SELECT writer FROM message_words WHERE message_id = %s",
                            [ids[0]]).fetchall() == [("ann",)]
    # His entries of his own message (his turn's) are read as his words are: by her too.
    with psycopg.connect(bob, autocommit=True) as conn:
        his_own = int(conn.execute(
            "INSERT INTO messages (session_id, position, turn, role, content, created_at)"
            " VALUES (%s, 5, 3, 'user', '鲍勃也去杭州。', %s) RETURNING id",
            [session_id, NOW]).fetchone()[0])
    index(bob, session_id, his_own, "鲍勃也去杭州。", 0.75)
    assert read(ann, session_id)[0] == [*before[0], 5] == read(bob, session_id)[0]
    assert sorted(read(ann, session_id)[1]) == [2, 3, 4, 5]  # his vector of hers: not yet
    with Store(ann) as store:
        assert store.recall.index_untrusted_words(session_id) == his_own
    with old.server.admin(old.database) as conn:
        assert conn.execute("SELECT writer FROM message_words WHERE message_id = %s",
                            [his_own]).fetchall() == [("bob",)]
    # An older chatmem (one that knows no p027) refuses the upgraded database.
    older_chatmem_refuses(ann, P027, monkeypatch)
