"""Who is embedding a session's backlog: one lease per (session, model) in `index_leases`.

A background `chatmem index` holds the lease of each session it embeds, so a
chat opened meanwhile leaves that backlog to it instead of embedding the same
messages a second time (chatmem.memory.vector_backlog). The lease names its
holder (process id and host) and ends at `expires_at`; the holder renews it
between batches and gives it back when done. A holder that died is seen two
ways: on its own host at once (no such process), elsewhere when the lease
expires, so a killed indexer never keeps a backlog from the next process.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from chatmem.store.connection import Connection, fetch_rows
from chatmem.store.postgres_writers import trusted_by_reader
from chatmem.timestamps import parse_time, stamp

LEASE_SECONDS = 60.0
"""How long a lease lasts unless renewed: many batches, even on a slow embedder."""


@dataclass(frozen=True)
class LeaseHolder:
    """A process that may hold a lease: its id and the host it runs on."""

    pid: int
    host: str

    @classmethod
    def this_process(cls) -> LeaseHolder:
        return cls.on_this_host(os.getpid())

    @classmethod
    def on_this_host(cls, pid: int) -> LeaseHolder:
        return cls(pid, socket.gethostname())

    def is_gone(self) -> bool:
        """Whether the holder certainly ended: a process of this host that no longer exists
        or is a zombie (ended, not yet reaped by its parent); on another host nobody can
        tell, and the lease's expiry decides."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False  # it exists, and is somebody else's
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            return False  # no /proc (not Linux): a live process id is taken as alive
        # The state follows the command name in parentheses, which may itself hold any.
        return stat[stat.rfind(")") + 2 :][:1] == "Z"


@dataclass(frozen=True)
class IndexLease:
    """A session's backlog for `model`, held by `holder` until `expires_at` (stored time)."""

    session_id: int
    model: str
    holder: LeaseHolder
    heartbeat_at: str
    expires_at: str


def lease_alive(lease: IndexLease, now: datetime) -> bool:
    """Whether the lease still holds at `now`: not expired, renewed at its last heartbeat
    for at most LEASE_SECONDS, and that heartbeat no further than LEASE_SECONDS from `now`
    (clocks of other hosts differ a little). A row no holder of chatmem's writes (on
    PostgreSQL a write grantee may, by SQL: one ending in 9999, or beating from a clock
    that far ahead) keeps nobody from embedding the backlog."""
    try:
        beat, ends = parse_time(lease.heartbeat_at), parse_time(lease.expires_at)
    except ValueError:
        return False  # written outside chatmem: nobody renews it
    term = timedelta(seconds=LEASE_SECONDS)
    return ends <= beat + term and now < ends and beat - term <= now


class LeaseTables:
    """Who is embedding a session's backlog (`store.leases`)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._db = connection.db

    def index_lease(self, session_id: int, model: str) -> IndexLease | None:
        """The live lease on the session's backlog for `model`; None when nobody holds one,
        or its holder is gone or let it expire, or (PostgreSQL) another role than this one
        or the session's owner took it: none of its vectors would be read here."""
        # On PostgreSQL only a lease whose holder's vectors this reader trusts (p031).
        trusted = (f" AND {trusted_by_reader('index_leases')}"
                   if self._db.kind == "postgresql" else "")
        rows = fetch_rows(self._db, "SELECT * FROM index_leases WHERE session_id = ?"
                          f" AND model = ?{trusted}", [session_id, model])
        if not rows:
            return None
        row = rows[0]
        lease = IndexLease(int(row["session_id"]), str(row["model"]),
                           LeaseHolder(int(row["pid"]), str(row["host"])),
                           str(row["heartbeat_at"]), str(row["expires_at"]))
        if not lease_alive(lease, self._connection.clock()) or lease.holder.is_gone():
            return None
        return lease

    def take_index_lease(self, session_id: int, model: str, holder: LeaseHolder,
                         seconds: float = LEASE_SECONDS) -> IndexLease | None:
        """Take or renew the lease for `holder`, in one write transaction (two processes
        asking at once: one gets it). Returns the other live holder's lease when it
        keeps it (nothing written), None when `holder` now holds it. A lease lasts at
        most LEASE_SECONDS (`lease_alive`)."""
        seconds = min(seconds, LEASE_SECONDS)
        with self._db.write():
            current = self.index_lease(session_id, model)
            if current is not None and current.holder != holder:
                return current
            now = self._connection.clock()
            self._db.execute(
                "INSERT INTO index_leases"
                " (session_id, model, pid, host, heartbeat_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (session_id, model) DO UPDATE SET pid = excluded.pid,"
                " host = excluded.host, heartbeat_at = excluded.heartbeat_at,"
                " expires_at = excluded.expires_at",
                [session_id, model, holder.pid, holder.host, stamp(now),
                 stamp(now + timedelta(seconds=seconds))])
        return None

    def release_index_lease(self, session_id: int, model: str, holder: LeaseHolder) -> None:
        """Give the lease back, if `holder` still has it (one that expired and was taken
        over is the new holder's)."""
        with self._db.write():
            self._db.execute("DELETE FROM index_leases WHERE session_id = ? AND model = ?"
                            " AND pid = ? AND host = ?",
                            [session_id, model, holder.pid, holder.host])
