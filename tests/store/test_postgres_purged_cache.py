"""A purge leaves no digest of the erased text in the vector cache, whoever wrote it (p029).

The cache finds a stored vector by the sha256 of the text it embeds. Its rows are each role's
own: a write share's grantee's row pointing at the owner's message (an older chatmem's, or
his SQL's) was hidden from her and hers to delete by no policy, so her `facts forget
--purge` masked the message and deleted her own row, and his stayed: he confirmed guesses at
the erased text by its digest."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import psycopg
import pytest
from cli_runner import run
from grantees import shared_session
from pg import OldHistory, PostgresServer, Team, add_messages, migrated_before
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.memory.vector_backlog import VectorBacklog
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

MARK = "chatmem.forgetting_digests"  # postgres_forgotten_digests.MARK
P029 = "p029_grantee_counts_only_erasures_and_keeps_fact_history"

SAID = ["My name is Ann.", "好的。", "我住在杭州。", "记下了。"]
ERASED = "我住在杭州。"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def embedded(url: str, session_id: int, embedder: HashEmbedder) -> int:
    with Store(url) as store:
        VectorBacklog(store, session_id, embedder, background=False).finish()
        return len(store.vectors.vector_rows(session_id, embedder.key))


def his_entries(url: str, model: str, session_id: int) -> int:
    """Cache entries of every message of the session, as bob's older chatmem wrote them."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            "INSERT INTO vector_cache (model, digest, message_id, context)"
            " SELECT %s, encode(sha256(convert_to(content, 'UTF8')), 'hex'), id, 0"
            " FROM messages WHERE session_id = %s", [model, session_id]).rowcount


def test_her_purge_deletes_his_cache_entries_of_the_erased_text(team: Team) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    session_id = shared_session(ann, "retrieval")
    add_messages(ann, session_id, SAID)
    embedder = HashEmbedder()
    assert embedded(ann, session_id, embedder) == len(SAID)
    with Store(ann) as store:
        store.facts.upsert_fact("城市", "杭州", scope="session", session_id=session_id)
    assert his_entries(bob, embedder.key, session_id) == len(SAID)
    cached = "SELECT owner FROM vector_cache WHERE digest = %s ORDER BY 1"
    assert [o for o, in team.rows(cached, [digest(ERASED)])] == ["ann", "bob"]

    run(ann, "facts", "forget", "城市", "--session", "旅行", "--purge", "--yes", code=0)

    assert team.rows("SELECT count(*) FROM messages WHERE content LIKE '%%杭州%%'") == [(0,)]
    assert team.rows(cached, [digest(ERASED)]) == []
    tables = team.rows("SELECT table_name FROM information_schema.tables"
                       " WHERE table_schema = current_schema()")
    assert len(tables) >= 20
    for table, in tables:  # nor any other row, anywhere
        assert team.rows(f"SELECT count(*) FROM {table} t WHERE strpos(t::text, %s) > 0",
                         [digest(ERASED)]) == [(0,)], table
    # His chatmem still works there: his next turn goes in, and the session is embedded again.
    with Store(bob) as store:
        open_session(store, Settings(), ScriptedProvider(), "ann/旅行").run_turn("我们周五见。")
    assert embedded(bob, session_id, embedder) == len(SAID) + 2


@pytest.fixture
def before_p029(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P029) as old:
        yield old


def test_an_older_database_upgrades_and_her_purge_deletes_his_entries(
        before_p029: OldHistory) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p029  # tables owned by a role row security binds, not a superuser
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann, "retrieval")
    add_messages(ann, session_id, SAID)
    assert his_entries(bob, "hashed", session_id) == len(SAID)
    PostgresBackend(old.url(old.keeper)).close()
    with Store(ann) as store:
        store.facts.upsert_fact("城市", "杭州", scope="session", session_id=session_id)
    mine = his_entries(ann, "hashed", session_id)
    cached = "SELECT owner FROM vector_cache WHERE digest = %s ORDER BY 1"
    with old.server.admin(old.database) as conn:
        assert [o for o, in conn.execute(cached, [digest(ERASED)])] == ["ann", "bob"]
    # The mark the trigger sets shows neither of them the other's entries.
    for url, own in ((ann, mine), (bob, len(SAID))):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"SET {MARK} = 'on'")
            assert conn.execute("SELECT count(*) FROM vector_cache").fetchone()[0] == own
            assert conn.execute("DELETE FROM vector_cache WHERE owner <> current_user"
                                ).rowcount == 0

    run(ann, "facts", "forget", "城市", "--session", "旅行", "--purge", "--yes", code=0)

    with old.server.admin(old.database) as conn:
        assert conn.execute(cached, [digest(ERASED)]).fetchall() == []
        # Hers of the session go with its vectors (store.redaction); his of a text the purge
        # did not change stay: the trigger takes only what the changed texts' were.
        assert conn.execute(cached, [digest(SAID[0])]).fetchall() == [("bob",)]
