"""Whose index lease a chat honours (p031): a write share's grantee's `chatmem index` of the
owner's session (or his SQL renewing a lease there every minute) made her chat leave her new
messages to him, whose vectors of them she never reads (p027): her recall by meaning lacked
them while it ran, or for good. Now a lease says who took it, and a reader honours only its
own, the session's owner's or one stored before p031. An older database upgrades to it
losing nothing; an older chatmem refuses it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from grantees import INSUFFICIENT_PRIVILEGE, shared_session, sql_as
from pg import OldHistory, PostgresServer, Team, migrated_before, older_chatmem_refuses

from chatmem.store import LeaseHolder, Store
from chatmem.timestamps import stamp

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

P031 = "p031_index_leases_say_who_wrote_them"
MODEL = "e5-small·384"
HIS = LeaseHolder(4242, "bobs-laptop")
HERS = LeaseHolder(4343, "anns-desktop")
"""Holders on other hosts: only their leases' expiry ends them (leases.lease_alive)."""
LEASES = "SELECT session_id, model, pid, host, writer FROM index_leases ORDER BY 1"


def renew(url: str, session_id: int) -> int | str:
    """A lease taken or renewed by plain SQL as chatmem writes one: a minute from now."""
    now = datetime.now(UTC)
    return sql_as(url, "INSERT INTO index_leases (session_id, model, pid, host, heartbeat_at,"
                       " expires_at) VALUES (%s, %s, 1, 'elsewhere', %s, %s)"
                       " ON CONFLICT (session_id, model) DO UPDATE SET heartbeat_at ="
                       " excluded.heartbeat_at, expires_at = excluded.expires_at",
                  [session_id, MODEL, stamp(now), stamp(now + timedelta(seconds=50))])


def test_the_owner_honours_no_lease_of_a_grantee(team: Team) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    session_id = shared_session(ann, "retrieval")
    with Store(bob) as store:
        assert store.leases.take_index_lease(session_id, MODEL, HIS) is None
    with Store(ann) as store:
        # Her chat embeds her backlog itself; her `chatmem index` takes the lease over.
        assert store.leases.index_lease(session_id, MODEL) is None
        assert store.leases.take_index_lease(session_id, MODEL, HERS) is None
    assert team.rows(LEASES) == [(session_id, MODEL, HERS.pid, HERS.host, "ann")]
    with Store(bob) as store:
        # His honours hers: he reads her vectors.
        held = store.leases.index_lease(session_id, MODEL)
        assert held is not None and held.holder == HERS
        assert store.leases.take_index_lease(session_id, MODEL, HIS) == held
    # His SQL renewing a lease every minute keeps her from nothing; nobody writes `writer`.
    assert renew(bob, session_id) == 1
    with Store(ann) as store:
        assert store.leases.index_lease(session_id, MODEL) is None
    for url in (ann, bob):
        assert sql_as(url, "UPDATE index_leases SET writer = 'ann'") == INSUFFICIENT_PRIVILEGE


@pytest.fixture
def before_p031(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P031) as old:
        yield old


def test_an_older_database_upgrades_keeping_its_leases(
        before_p031: OldHistory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p031
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann, "retrieval")
    assert renew(bob, session_id) == 1
    with old.server.admin(old.database) as conn:
        stored = conn.execute("SELECT * FROM index_leases").fetchall()

    PostgresBackend(old.url(old.keeper)).close()

    with old.server.admin(old.database) as conn:
        assert conn.execute("SELECT session_id, model, pid, host, heartbeat_at, expires_at,"
                            " owner FROM index_leases").fetchall() == stored
        assert conn.execute("SELECT writer FROM index_leases").fetchall() == [(None,)]
    # One from before is read as before, until renewed.
    with Store(ann) as store:
        held = store.leases.index_lease(session_id, MODEL)
        assert held is not None and held.holder == LeaseHolder(1, "elsewhere")
    assert renew(bob, session_id) == 1
    with Store(ann) as store:
        assert store.leases.index_lease(session_id, MODEL) is None
    # An older chatmem (one that knows no p031) refuses the upgraded database.
    older_chatmem_refuses(ann, P031, monkeypatch)
