"""Opening a SQLite history file: connecting, checking it is chatmem's and not newer, and
creating its schema or upgrading it (alone: chatmem.store.upgrading). Part of
`SqliteBackend`."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from chatmem.errors import NotChatmemDatabase, StoreError, StoreFailure
from chatmem.history_notices import WaitingForUpgrade
from chatmem.store import upgrading
from chatmem.store.permissions import missing_permission
from chatmem.store.schema import apply_migrations, migration_names, pending_migrations
from chatmem.store.sqlite_failures import failure_of, upgrade_refused
from chatmem.store.sqlite_files import BUSY_TIMEOUT_MS, connect
from chatmem.store.upgrading import (
    ALONE_WAIT_S,
    FIRST_WAIT_MS,
    UPGRADE_WAIT_S,
    UpgradeListener,
    back_off,
    in_use,
    share_again,
    take_alone,
)

# Tables a crash of chatmem 0.1 could leave behind in a new file before its schema
# existed (sqlite-utils created the migrations table outside the transaction).
_BOOKKEEPING = {"_sqlite_migrations"}
CACHE_KIB = 32 * 1024
"""The pages of a history file a connection holds in memory at most (SQLite's default: 2 MB)."""


class _Database(sqlite_utils.Database):
    def executescript(self, sql: str) -> sqlite3.Cursor:
        """Run a script statement by statement, inside the caller's transaction.

        sqlite3's own executescript COMMITs first: a migration using it would be
        half-applied when the process dies between two of its statements.
        """
        cursor = self.conn.cursor()
        statement = ""
        for piece in sql.split(";"):
            statement += piece + ";"
            if sqlite3.complete_statement(statement):
                if statement.strip(" \n\t;"):
                    cursor.execute(statement)
                statement = ""
        return cursor


class SqliteOpening:
    """The opening methods of `SqliteBackend`."""

    path: Path
    location: str
    conn: Any
    sqlite: _Database
    _on_upgrade: UpgradeListener
    _writing: int

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def write(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def write_error(self, error: sqlite3.Error, *, waited_s: int = BUSY_TIMEOUT_MS // 1000
                    ) -> StoreError:
        raise NotImplementedError

    def statement_error(self, error: sqlite3.Error | UnicodeDecodeError) -> StoreError:
        raise NotImplementedError

    def _value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def _connect(self, path: str | Path, key: str | None, timeout_ms: int) -> None:
        try:
            self.conn = connect(path, key, timeout_ms=timeout_ms)
        except sqlite3.Error as e:
            why = missing_permission(self.path, write=False) or str(e)
            raise StoreError(f"{path}: cannot open database: {why}", kind=failure_of(e),
                             location=self.location, reason=str(e)) from None
        # sqlite-utils runs the migrations (their bookkeeping is its Migrations table).
        self.sqlite = _Database(self.conn)
        try:
            self.execute(f"PRAGMA busy_timeout = {timeout_ms}")
            self.execute("PRAGMA foreign_keys = ON")
            # Erased rows (delete, purge) are overwritten, not just unlinked.
            self.execute("PRAGMA secure_delete = ON")
            # A long history's recall reads its pool's messages and words index all over the
            # file every turn: in SQLite's default 2 MB of pages a turn's writes pushed them
            # out, and 10,000 turns read ~100 pages from the file again each turn. Pages are
            # held as read (a short history's take what it has), this much at most.
            self.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            if str(path) != ":memory:":
                # Safe with WAL (no corruption on power loss; what was committed since the
                # log was last synced, folded between turns every few, may be lost) and it
                # spares an fsync per commit: a turn costs ~1 ms, not ~10.
                self.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            self.conn.close()
            raise

    def _connect_waiting(self, path: str | Path, key: str | None) -> list[str]:
        """Connect, and read the migrations the file still needs, waiting while another
        chatmem holds the file alone to upgrade it (chatmem.store.upgrading): reading
        would say the file is busy once BUSY_TIMEOUT_MS passed, yet an upgrade of a large
        history takes longer. The first try waits briefly, then opening says it waits."""
        def attempt(waited: bool) -> list[str]:
            self._connect(path, key, BUSY_TIMEOUT_MS if waited else FIRST_WAIT_MS)
            try:
                pending = self._pending_migrations()
                self.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            except BaseException:
                self.conn.close()
                raise
            return pending

        return upgrading.waiting_while_busy(
            attempt, lambda e: isinstance(e, StoreError) and e.kind is StoreFailure.BUSY,
            lambda: self._on_upgrade(WaitingForUpgrade(self.location, UPGRADE_WAIT_S)),
            UPGRADE_WAIT_S)

    def _pending_migrations(self) -> list[str]:
        """The migrations this file still needs; raises if the file is not ours."""
        tables = {r[0] for r in self.execute("SELECT name FROM sqlite_master"
                                             " WHERE type = 'table'")}
        if tables <= _BOOKKEEPING:
            if tables and self._value("SELECT count(*) FROM _sqlite_migrations"
                                      " WHERE migration_set != 'chatmem'"):
                raise NotChatmemDatabase(
                    f"{self.path} is not a chatmem database (it has other migrations)",
                    location=self.location)
            # New, or left by a crash before its schema existed: start afresh.
            return pending_migrations(set())
        if "chatmem_meta" not in tables:
            raise NotChatmemDatabase(f"{self.path} is not a chatmem database (it has other tables)",
                                     location=self.location)
        applied = {r[0] for r in self.execute(
            "SELECT name FROM _sqlite_migrations WHERE migration_set = 'chatmem'")}
        unknown = applied - migration_names()
        if unknown:
            newest = sorted(unknown)[-1]
            raise NotChatmemDatabase(
                f"{self.path} was written by a newer chatmem (schema {newest});"
                " upgrade chatmem", location=self.location, newer_schema=newest,
            )
        return pending_migrations(applied)

    def _migrate(self, pending: list[str], reconnect: Callable[[], list[str]]) -> None:
        """Create a new file's schema, or upgrade an older file alone (chatmem.store.upgrading);
        `reconnect` opens the file again and says what it still needs."""
        if not pending:
            return
        try:
            if pending == pending_migrations(set()):
                with self.write():  # another process may have created it meanwhile
                    pending = self._pending_migrations()
                    if pending and pending == pending_migrations(set()):
                        # Nothing of ours exists yet: forget what a crashed 0.1 may have
                        # recorded.
                        self.execute("DROP TABLE IF EXISTS _sqlite_migrations")
                    apply_migrations(self.sqlite, pending)
            else:
                self._upgrade_alone(reconnect)
        except StoreError as e:
            if e.kind is StoreFailure.READ_ONLY and pending != pending_migrations(set()):
                raise upgrade_refused(self.path, self.location) from None
            raise

    def _upgrade_alone(self, reconnect: Callable[[], list[str]]) -> None:
        """Run the pending migrations while no other connection has the file open; while
        others do, let go and try again (they may be chatmems about to find it upgraded)
        until ALONE_WAIT_S passed, then refuse."""
        deadline = time.monotonic() + ALONE_WAIT_S
        while True:
            try:
                alone = take_alone(self.conn, BUSY_TIMEOUT_MS)
            except sqlite3.Error as e:
                raise self.write_error(e) from None
            if alone:
                break
            if time.monotonic() > deadline:
                raise in_use(self.location)
            self.conn.close()
            back_off()
            if not reconnect():
                return  # another chatmem upgraded it meanwhile
        try:
            with self._committing():
                pending = self._pending_migrations()
                if pending:
                    # A write that changes nothing: a file this process may not write
                    # refuses here, before an upgrade is announced that cannot run.
                    version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
                    self.conn.execute(f"PRAGMA user_version = {version}")
                    self._on_upgrade(upgrading.upgrading(self.location, pending))
                    apply_migrations(self.sqlite, pending)
        finally:
            share_again(self.conn)

    @contextmanager
    def _committing(self, after: Callable[[], object] = lambda: None) -> Iterator[None]:
        """The transaction begun on `conn`: committed at the end (then `after`), or rolled
        back, a driver's error said as chatmem's (`write_error`, `statement_error`)."""
        self._writing += 1
        try:
            yield
            self.conn.execute("COMMIT")
            after()
        except sqlite3.OperationalError as e:
            self.conn.rollback()
            raise self.write_error(e) from None
        except sqlite3.Error as e:
            self.conn.rollback()
            raise self.statement_error(e) from None
        except BaseException:
            self.conn.rollback()
            raise
        finally:
            self._writing -= 1
