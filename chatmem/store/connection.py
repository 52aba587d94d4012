"""The connection shared by the store's table groups: open, check, pragmas."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self, cast

import sqlite_utils

from chatmem.errors import HistoryLocked, NotChatmemDatabase, StoreError
from chatmem.store.result_codes import BUSY, DISK_FAILED, NOT_A_DATABASE, primary_code
from chatmem.store.schema import apply_migrations, migration_names, pending_migrations

BUSY_TIMEOUT_MS = 5000


def now() -> str:
    return stamp(datetime.now(UTC))


def stamp(moment: datetime) -> str:
    """How times are stored: ISO 8601 in UTC, to the millisecond."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def utc_now() -> datetime:
    return datetime.now(UTC)


# Tables a crash of chatmem 0.1 could leave behind in a new file before its schema
# existed (sqlite-utils created the migrations table outside the transaction).
_BOOKKEEPING = {"_sqlite_migrations"}


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


def create_private_file(path: Path) -> None:
    """Create `path` readable by its owner only (0600), unless it exists.

    SQLite gives the -wal and -shm files the mode of the database file.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError as e:
        raise StoreError(f"{path}: cannot create it: {e.strerror}") from None


def fold_wal(path: Path) -> None:
    """Fold a plain file's write-ahead log into the file, so that the file alone is whole.

    An encrypted file cannot be read without its key and is left as it is.
    """
    try:
        connection = sqlite3.connect(path)
        try:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
    except sqlite3.DatabaseError:
        pass


def connect(path: str | Path, key: str | None = None) -> sqlite3.Connection:
    """The raw SQLite connection to a history file (the one place a file is opened).

    With a key it is a SQLCipher connection (chatmem.store.cipher), the key
    already checked, that behaves and fails exactly as a sqlite3 one.
    """
    if key is None:
        return sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
    from chatmem.store import cipher

    conn: Any = cipher.open_encrypted(Path(path), key, BUSY_TIMEOUT_MS / 1000)
    return cast(sqlite3.Connection, conn)


def check_key(path: Path, key: str | None) -> str | None:
    """The key to open `path` with (None: plaintext), or an error before anything is written.

    An encrypted file needs the key; a plaintext one refuses a key rather than
    be used unencrypted by someone who believes it is not. A new file is
    created encrypted when a key is given.
    """
    from chatmem.store import cipher

    kind = cipher.file_kind(path)
    if kind == "encrypted" and key is None:
        if not cipher.available():
            raise HistoryLocked(f"{path} is encrypted: install SQLCipher support "
                                f"({cipher.INSTALL_HINT}) and {cipher.KEY_HINT}", missing=True)
        raise HistoryLocked(f"{path} is encrypted: {cipher.KEY_HINT}", missing=True)
    if key is None or kind == "other":
        return None  # "other" is refused by SQLite as "not a database"
    if kind == "plain":
        raise StoreError(f"{path} is not encrypted, but a key is set: `chatmem encrypt` "
                         "encrypts it with that key (or unset CHATMEM_KEY and key_command)")
    cipher.driver()  # the extra must be there before a new file is created
    return key


class Connection:
    """A chatmem database file. Use as a context manager or call close().

    Opening a new or older file creates or upgrades its schema in one write
    transaction, so a process killed meanwhile leaves the file as it was, and
    processes opening it at the same moment wait for each other.
    """

    def __init__(self, path: str | Path, *, key: str | None = None,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self.path = Path(path)
        self.clock = clock
        """What time it is for this store's timestamps; tests of retention set it."""
        in_memory = str(path) == ":memory:"
        if in_memory:
            key = None
        else:
            if self.path.is_dir():
                # SQLite would only say "disk I/O error".
                raise StoreError(f"{self.path} is a directory, not a history file")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"{self.path}: cannot create its folder: {e.strerror}") from None
            from chatmem.store import cipher

            # A copy left by a killed encrypt/decrypt/rekey holds the whole history.
            cipher.remove_abandoned_conversions(self.path)
            key = check_key(self.path, key)
            create_private_file(self.path)
        self.encrypted = key is not None
        try:
            self.db = _Database(connect(path, key))
        except sqlite3.Error as e:
            raise StoreError(f"{path}: cannot open database: {e}") from None
        try:
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db.execute("PRAGMA foreign_keys = ON")
            # Erased rows (delete, purge) are overwritten, not just unlinked.
            self.db.execute("PRAGMA secure_delete = ON")
            # Refuse foreign or newer files before writing a single byte to them.
            self._pending_migrations()
            if not in_memory:
                self._wait_for(lambda: self.db.execute("PRAGMA journal_mode = WAL"))
                # Safe with WAL (no corruption on power loss, at worst the last turn
                # is lost) and it spares an fsync per commit: a turn costs ~1 ms, not ~10.
                self.db.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        except sqlite3.DatabaseError as e:
            self.db.close()
            raise self._open_error(e) from None
        except BaseException:
            self.db.close()
            raise

    def _open_error(self, error: sqlite3.Error) -> StoreError:
        code = primary_code(error)
        if code == sqlite3.SQLITE_CANTOPEN:
            # WAL readers need to create the -shm file beside the database.
            return StoreError(
                f"{self.path}: cannot open it: SQLite needs to write {self.path.name}-wal and "
                f"{self.path.name}-shm beside it (is the folder read-only?)"
            )
        if code in NOT_A_DATABASE:
            return NotChatmemDatabase(f"{self.path} is not a chatmem database ({error})")
        return self.write_error(error)

    def _wait_for(self, statement: Callable[[], object]) -> None:
        """Run `statement`, retrying while another process holds the file.

        Changing the journal mode can report "locked" at once instead of
        waiting for the busy timeout.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                statement()
                return
            except sqlite3.OperationalError as e:
                if primary_code(e) not in BUSY or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _pending_migrations(self) -> list[str]:
        """The migrations this file still needs; raises if the file is not ours."""
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master"
                                                " WHERE type = 'table'")}
        if tables <= _BOOKKEEPING:
            if tables and self._value("SELECT count(*) FROM _sqlite_migrations"
                                      " WHERE migration_set != 'chatmem'"):
                raise NotChatmemDatabase(
                    f"{self.path} is not a chatmem database (it has other migrations)")
            # New, or left by a crash before its schema existed: start afresh.
            return pending_migrations(set())
        if "chatmem_meta" not in tables:
            raise NotChatmemDatabase(f"{self.path} is not a chatmem database (it has other tables)")
        applied = {r[0] for r in self.db.execute(
            "SELECT name FROM _sqlite_migrations WHERE migration_set = 'chatmem'")}
        unknown = applied - migration_names()
        if unknown:
            raise NotChatmemDatabase(
                f"{self.path} was written by a newer chatmem (schema {sorted(unknown)[-1]});"
                " upgrade chatmem"
            )
        return pending_migrations(applied)

    def _migrate(self) -> None:
        if not self._pending_migrations():
            return
        # Under the write lock: another process may have migrated meanwhile.
        with self.write():
            pending = self._pending_migrations()
            if pending and pending == pending_migrations(set()):
                # Nothing of ours exists yet: forget what a crashed 0.1 may have recorded.
                self.db.execute("DROP TABLE IF EXISTS _sqlite_migrations")
            apply_migrations(self.db, pending)

    def now(self) -> str:
        return stamp(self.clock())

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def write(self) -> Iterator[None]:
        """One write transaction, all or nothing, taking the write lock up front.

        A deferred BEGIN (sqlite-utils' atomic) that reads first and then writes
        fails at once with "database is locked" when another process committed
        meanwhile: WAL cannot upgrade a stale read. BEGIN IMMEDIATE waits for the
        lock instead (busy timeout), so two chats on one file both keep every turn.
        """
        if self.db.conn.in_transaction:
            with self.db.atomic():
                yield
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            raise self.write_error(e) from None
        try:
            yield
            self.db.execute("COMMIT")
        except sqlite3.OperationalError as e:
            self.db.conn.rollback()
            raise self.write_error(e) from None
        except BaseException:
            self.db.conn.rollback()
            raise

    def check_writable(self) -> None:
        """Raise the error a write would meet, without writing: a turn checks before it is sent.

        Takes the write lock and attempts a write that changes no row, then rolls back.
        """
        if self.db.conn.in_transaction:
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute("UPDATE chatmem_meta SET value = value WHERE 0")
            finally:
                self.db.execute("ROLLBACK")
        except sqlite3.Error as e:
            raise self.write_error(e) from None

    def write_error(self, error: sqlite3.Error) -> StoreError:
        code = primary_code(error)
        if code == sqlite3.SQLITE_READONLY:
            return StoreError(f"{self.path} is read-only: nothing can be stored "
                              "(check the file's and its folder's permissions)")
        if code in DISK_FAILED:
            return StoreError(f"{self.path}: the disk is full or failing; nothing was stored"
                              " (free some space and try again)")
        if code in BUSY:
            return StoreError(f"{self.path} is busy: another process held it for over "
                              f"{BUSY_TIMEOUT_MS // 1000} s; try again")
        return StoreError(f"{self.path}: {error}")

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, list(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _value(self, sql: str, params: Iterable[Any] = ()) -> Any:
        row = self.db.execute(sql, list(params)).fetchone()
        return row[0] if row else None
