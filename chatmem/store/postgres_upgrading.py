"""Migrating a PostgreSQL history: creating its tables, or upgrading them alone
(chatmem.store.upgrading says why).

Other connections are found in pg_stat_activity, whose rows every role sees (their
database, role and application name; not what they run unless it is a superuser or has
pg_read_all_stats). A connection of this very chatmem names itself by `MARK` (libpq's
fallback_application_name: a URL's application_name wins) and is not counted: it is waiting
for the write lock, and finds the migrations done once it has it. Any other is: an older
chatmem (which sets no name), or another client, which chatmem cannot tell apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from chatmem.errors import StoreError
from chatmem.history_notices import LockHolder, WaitingForUpgrade, WaitingForWrite
from chatmem.store import postgres_schema as schema
from chatmem.store.upgrading import (
    ALONE_WAIT_S,
    FIRST_WAIT_MS,
    UpgradeListener,
    in_use,
    upgrading,
)
from chatmem.timestamps import utc_now

MARK = f"chatmem schema {len(schema.MIGRATIONS)}"
"""The application_name of this chatmem's connections (what it knows of the schema)."""
WRITE_LOCK = int.from_bytes(b"chatmem", "big")
"""The advisory lock every writer takes (pg_advisory_xact_lock): one writer at a time."""


def others_connected(conn: Any) -> list[tuple[int, str | None, str]]:
    """(pid, role, application) of the other client connections to this database that may
    write to it the old way: not this chatmem's own (`MARK`), nor the server's workers."""
    conn.execute("SELECT pg_stat_clear_snapshot()")  # the activity as it is now
    return [(int(pid), role, app or "") for pid, role, app in conn.execute(
        "SELECT pid, usename, application_name FROM pg_stat_activity"
        " WHERE datname = current_database()"
        " AND pid <> pg_backend_pid() AND usesysid IS NOT NULL"
        " AND coalesce(backend_type, 'client backend') = 'client backend'"
        " AND application_name IS DISTINCT FROM %s ORDER BY pid", (MARK,)).fetchall()]


def described(others: list[tuple[int, str | None, str]]) -> str:
    """`2 other connections: pid 16656 (psql), 16701; role postgres`: what to close."""
    roles = sorted({role for _, role, _ in others if role})
    pids = ", ".join(f"{pid} ({app})" if app else str(pid) for pid, _, app in others[:5]) \
        + (" …" if len(others) > 5 else "")
    return (f"{len(others)} other connection{'s' if len(others) != 1 else ''}: pid {pids}"
            + (f"; role {', '.join(roles)}" if roles else ""))


def lock_holder(conn: Any, lock: int) -> LockHolder | None:
    """The connection holding advisory `lock` (any role may take one, so this may be no
    chatmem at all): its pid, role and application, which every role may read."""
    row = conn.execute(
        "SELECT a.pid, a.usename, a.application_name FROM pg_locks l"
        " JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND l.granted AND l.database ="
        " (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND l.classid::bigint = %s AND l.objid::bigint = %s AND l.objsubid = 1 LIMIT 1",
        ((lock >> 32) & 0xFFFFFFFF, lock & 0xFFFFFFFF)).fetchone()
    return None if row is None else LockHolder(int(row[0]), row[1], row[2] or None)


def take_write_lock(conn: Any, lock: int, busy_timeout_ms: int, tell: UpgradeListener,
                    waiting: WaitingForUpgrade | WaitingForWrite) -> None:
    """The write lock, inside the caller's transaction, for migrating or for a turn's paid
    reply: held by another chatmem's upgrade (a long import) it is waited for up to
    `waiting.seconds` (not the busy timeout), and the listener is told `waiting` once."""
    deadline = time.monotonic() + FIRST_WAIT_MS / 1000
    while not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (lock,)).fetchone()[0]:
        if time.monotonic() > deadline:
            if isinstance(waiting, WaitingForWrite):
                waiting = replace(waiting, holder=lock_holder(conn, lock))
            tell(waiting)
            conn.execute(f"SET LOCAL lock_timeout = {int(waiting.seconds) * 1000}")
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
            conn.execute(f"SET LOCAL lock_timeout = {int(busy_timeout_ms)}")
            return
        time.sleep(0.05)


def migrate(conn: Any, pending_now: Callable[[], list[str]], *, location: str,
            upgrade: bool, tell: UpgradeListener) -> bool:
    """Run the migrations still pending, in the caller's transaction under the write lock;
    an `upgrade` (tables an earlier chatmem made) only while no other connection has the
    database open. False: others have; nothing was changed, the caller tries again."""
    pending = pending_now()  # another process may have migrated meanwhile
    if not pending:
        return True
    if upgrade:
        if others_connected(conn):
            return False
        tell(upgrading(location, pending))
    conn.execute(schema.CREATE_BOOKKEEPING)
    for fn in schema.MIGRATIONS:
        if fn.__name__ in pending:
            fn(conn.execute)
            conn.execute(f"INSERT INTO {schema.BOOKKEEPING} (name, applied_at) VALUES (%s, %s)",
                         (fn.__name__, str(utc_now())))
    return True


def refused(conn: Any, location: str) -> StoreError:
    """The upgrade refused after ALONE_WAIT_S, naming who still has the database open."""
    others = others_connected(conn)
    return in_use(location, described(others) if others else None)


def alone_deadline() -> float:
    return time.monotonic() + ALONE_WAIT_S
