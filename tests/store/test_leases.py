"""Index leases: one live holder per session backlog, renewed, given back, and outlived."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import timedelta

from conftest import History

from chatmem.store import LeaseHolder, Store
from chatmem.store.leases import LEASE_SECONDS
from chatmem.timestamps import parse_time, stamp, utc_now

MODEL = "hash:256"
ELSEWHERE = LeaseHolder(4242, "another-host.invalid")
"""A holder on another host: nothing here can tell whether it runs, only its expiry."""


def ended_process() -> LeaseHolder:
    """A process of this host that has ended (and was reaped)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return LeaseHolder(int(done.stdout), socket.gethostname())


def test_one_holder_at_a_time_and_the_other_sees_who(store: Store, history: History) -> None:
    session = store.sessions.create_session("s", "retrieval").id
    me = LeaseHolder.this_process()
    assert store.leases.index_lease(session, MODEL) is None
    assert store.leases.take_index_lease(session, MODEL, ELSEWHERE) is None
    with history.open() as other:  # another process's connection
        kept = other.leases.take_index_lease(session, MODEL, me)
        assert kept is not None and kept.holder == ELSEWHERE
        lease = other.leases.index_lease(session, MODEL)
        assert lease is not None and lease.holder == ELSEWHERE
        # The lease is per model: another model's backlog is free.
        assert other.leases.take_index_lease(session, "other:8", me) is None
    assert store.leases.index_lease(session, "other:8") is not None


def test_renewing_moves_the_expiry_and_giving_back_frees_it(store: Store,
                                                            history: History) -> None:
    session = store.sessions.create_session("s", "retrieval").id
    assert store.leases.take_index_lease(session, MODEL, ELSEWHERE, seconds=30) is None
    first = store.leases.index_lease(session, MODEL)
    assert first is not None
    later = utc_now() + timedelta(seconds=20)
    with history.open(clock=lambda: later) as renewing:
        assert renewing.leases.take_index_lease(session, MODEL, ELSEWHERE, seconds=30) is None
        renewed = renewing.leases.index_lease(session, MODEL)
    assert renewed is not None
    assert parse_time(renewed.expires_at) - parse_time(first.expires_at) >= timedelta(seconds=19)
    store.leases.release_index_lease(session, MODEL, LeaseHolder(1, "another-host.invalid"))
    assert store.leases.index_lease(session, MODEL) is not None  # not the holder's: kept
    store.leases.release_index_lease(session, MODEL, ELSEWHERE)
    assert store.leases.index_lease(session, MODEL) is None


def test_an_expired_lease_is_taken_over(store: Store, history: History) -> None:
    session = store.sessions.create_session("s", "retrieval").id
    assert store.leases.take_index_lease(session, MODEL, ELSEWHERE, seconds=60) is None
    me = LeaseHolder.this_process()
    assert store.leases.take_index_lease(session, MODEL, me) is not None
    later = utc_now() + timedelta(seconds=61)
    with history.open(clock=lambda: later) as after_expiry:
        assert after_expiry.leases.index_lease(session, MODEL) is None
        assert after_expiry.leases.take_index_lease(session, MODEL, me) is None
        lease = after_expiry.leases.index_lease(session, MODEL)
        assert lease is not None and lease.holder == me
        # The old holder, back too late, gives back nothing that is not its own.
        after_expiry.leases.release_index_lease(session, MODEL, ELSEWHERE)
        assert after_expiry.leases.index_lease(session, MODEL) is not None


def test_a_holder_that_ended_on_this_host_holds_nothing(store: Store) -> None:
    session = store.sessions.create_session("s", "retrieval").id
    gone = ended_process()
    assert store.leases.take_index_lease(session, MODEL, gone) is None
    assert store.leases.index_lease(session, MODEL) is None
    me = LeaseHolder.this_process()
    assert store.leases.take_index_lease(session, MODEL, me) is None
    lease = store.leases.index_lease(session, MODEL)
    assert lease is not None and lease.holder == me


def test_a_deleted_session_takes_its_leases_along(store: Store) -> None:
    session = store.sessions.create_session("s", "retrieval").id
    assert store.leases.take_index_lease(session, MODEL, ELSEWHERE) is None
    store.sessions.delete_session("s")
    assert store.db.execute("SELECT count(*) FROM index_leases").fetchone()[0] == 0


def test_a_lease_nobody_renews_holds_nothing(store: Store) -> None:
    """A lease row written outside chatmem (on PostgreSQL, a write grantee's SQL) that ends
    in 9999, beats from a clock that far ahead, or was last renewed long ago, keeps no
    backlog from being embedded: only a heartbeat within LEASE_SECONDS holds, as long."""
    session = store.sessions.create_session("旅行", "retrieval").id
    me = LeaseHolder.this_process()
    now = utc_now()
    ages = timedelta(seconds=LEASE_SECONDS)
    for heartbeat, expires in (
            (stamp(now), "9999-12-31T23:59:59.000+00:00"),
            ("9999-12-31T23:58:59.000+00:00", "9999-12-31T23:59:59.000+00:00"),
            (stamp(now + 3 * ages), stamp(now + 4 * ages)),
            (stamp(now - 2 * ages), stamp(now + ages)),
            ("明天", "9999")):
        with store.write():
            store.db.execute("DELETE FROM index_leases")
            store.db.execute("INSERT INTO index_leases (session_id, model, pid, host,"
                             " heartbeat_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
                             [session, MODEL, ELSEWHERE.pid, ELSEWHERE.host, heartbeat, expires])
        assert store.leases.index_lease(session, MODEL) is None, (heartbeat, expires)
        assert store.leases.take_index_lease(session, MODEL, me) is None
        lease = store.leases.index_lease(session, MODEL)
        assert lease is not None and lease.holder == me
    # One renewed as chatmem renews it holds, from another host's clock a little ahead too.
    with store.write():
        store.db.execute("UPDATE index_leases SET pid = ?, host = ?, heartbeat_at = ?,"
                         " expires_at = ?", [ELSEWHERE.pid, ELSEWHERE.host,
                                             stamp(now + ages / 2), stamp(now + ages * 1.5)])
    lease = store.leases.index_lease(session, MODEL)
    assert lease is not None and lease.holder == ELSEWHERE
