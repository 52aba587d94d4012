"""Upgrading a history alone.

A migration that changes how rows are written (how words are folded into the index) is
recorded as done once it commits; an older chatmem still running on the history would go
on writing its way, and what it wrote after the upgrade could never be found (the
re-folding will not run again). So an upgrade runs only while no other connection has the
history open: it waits a little for them to close, then refuses, changing nothing. Opening a
history with nothing to migrate is never refused: many processes share one by design.

SQLite: the upgrading connection takes the file in exclusive locking mode (every open
connection holds a shared lock on a WAL file, idle or not), which also keeps every other
connection out until the upgrade is done; one opening meanwhile waits for it and says so.
PostgreSQL: the upgrade counts the other client connections to the database.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

from chatmem.errors import StoreError, StoreFailure
from chatmem.history_notices import (
    HistoryUpgrading,
    LockHolder,
    WaitingForUpgrade,
    WaitingForWrite,
)
from chatmem.store.result_codes import BUSY, primary_code

T = TypeVar("T")

ALONE_WAIT_S = 3.0
"""How long an upgrade waits for the other connections to close before it refuses."""
UPGRADE_WAIT_S = 600
"""How long opening a history waits for another chatmem's upgrade of it to finish."""
FIRST_WAIT_MS = 500
"""How long the first read waits before it says it is waiting for an upgrade."""

WRITE_WAIT_S = UPGRADE_WAIT_S
"""How long a turn waits for another process's write (`Backend.write(patient=True)`): a
paid reply must outlast a long import, which holds the lock for as long as it writes."""

UpgradeListener = Callable[[HistoryUpgrading | WaitingForUpgrade | WaitingForWrite], None]
"""Hears that an upgrade starts, or that opening or a turn waits for another's write (the
front end words it): a large history takes seconds to upgrade, a large import to write."""


def ignore(notice: HistoryUpgrading | WaitingForUpgrade | WaitingForWrite) -> None:
    """The listener of a caller that did not ask (tests, a scratch history)."""


def upgrading(location: str, pending: list[str]) -> HistoryUpgrading:
    return HistoryUpgrading(location, pending[0], pending[-1], len(pending))


def in_use(location: str, others: str | None = None) -> StoreError:
    """The upgrade refused: `others` (who has the history open, when known) must close it."""
    return StoreError(
        f"another program has {location} open{f' ({others})' if others else ''} (an older"
        " chatmem, its REPL, serve or mcp, or an SQL shell): close it, then run again (this"
        " chatmem upgrades the history first, alone: an older one writing meanwhile would"
        " store what the upgrade cannot fix); nothing was changed",
        kind=StoreFailure.BUSY, location=location, reason="open in another chatmem process")


def held_too_long(where: str, seconds: float, location: str,
                  holder: LockHolder | None = None) -> StoreError:
    """The write lock not had: another process held it past the `seconds` this one waited
    (the busy timeout, or a turn's WRITE_WAIT_S), said alike on every backend (`where`: the
    file's path or the database's masked URL), naming the `holder` where it is known."""
    held = f" ({holder.about})" if holder is not None else ""
    return StoreError(f"{where} is busy: another process{held} held it for over {seconds:g} s;"
                      " try again", kind=StoreFailure.BUSY, location=location)


def waiting_while_busy(attempt: Callable[[bool], T], busy: Callable[[Exception], bool],
                       tell: Callable[[], object], limit_s: float) -> T:
    """`attempt(waited)` until it is not `busy`: at its first busy failure `tell` (the
    listener told once that it waits; `waited` True from then on), then tried again until
    `limit_s` passed since, when the last busy failure is raised."""
    since: float | None = None
    while True:
        try:
            return attempt(since is not None)
        except Exception as e:
            if not busy(e):
                raise
            now = time.monotonic()
            if since is None:
                since = now
                tell()
            elif now - since >= limit_s:
                raise


def back_off() -> None:
    """Between two tries at being alone: two chatmems opening an older history at the same
    moment each see the other, so each lets go for a random while and one gets through."""
    time.sleep(random.uniform(0.05, 0.3))


def take_alone(conn: sqlite3.Connection, busy_timeout_ms: int) -> bool:
    """Begin an exclusive transaction on `conn` if no other connection has its file open
    (True), without waiting; else leave `conn` as it was (False).

    In exclusive locking mode the transaction takes the database file's exclusive lock,
    which an idle connection's shared lock refuses; BEGIN IMMEDIATE would not notice it.
    """
    conn.execute("PRAGMA busy_timeout = 0")  # waiting would hold readers off meanwhile
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    try:
        conn.execute("BEGIN EXCLUSIVE")
        return True
    except sqlite3.OperationalError as e:
        if primary_code(e) not in BUSY:
            raise
        share_again(conn)
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")


def share_again(conn: sqlite3.Connection) -> None:
    """Back to normal locking: the exclusive lock goes at the next read."""
    conn.execute("PRAGMA locking_mode = NORMAL")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
