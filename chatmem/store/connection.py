"""The connection shared by the store's table groups: open, check, pragmas."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import sqlite_utils

from chatmem.errors import NotChatmemDatabase, StoreError
from chatmem.store.schema import migration_names, migrations

BUSY_TIMEOUT_MS = 5000


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _check_is_chatmem(path: Path) -> None:
    """Refuse foreign or newer files before writing a single byte to them."""
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise StoreError(f"{path}: cannot open database: {e}") from None
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        if not tables:
            return
        if "chatmem_meta" not in tables:
            raise NotChatmemDatabase(f"{path} is not a chatmem database (it has other tables)")
        applied = {
            r[0]
            for r in conn.execute(
                "SELECT name FROM _sqlite_migrations WHERE migration_set = 'chatmem'"
            )
        }
    except sqlite3.DatabaseError as e:
        if "unable to open" in str(e):
            # WAL readers need to create the -shm file beside the database.
            raise StoreError(
                f"{path}: cannot open it: SQLite needs to write {path.name}-wal and "
                f"{path.name}-shm beside it (is the folder read-only?)"
            ) from None
        raise NotChatmemDatabase(f"{path} is not a chatmem database ({e})") from None
    finally:
        conn.close()
    unknown = applied - migration_names()
    if unknown:
        raise NotChatmemDatabase(
            f"{path} was written by a newer chatmem (schema {sorted(unknown)[-1]}); upgrade chatmem"
        )


class Connection:
    """A chatmem database file. Use as a context manager or call close()."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            if self.path.is_dir():
                # SQLite would only say "disk I/O error".
                raise StoreError(f"{self.path} is a directory, not a history file")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"{self.path}: cannot create its folder: {e.strerror}") from None
            _check_is_chatmem(self.path)
        try:
            conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
            self.db = sqlite_utils.Database(conn)
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db.execute("PRAGMA foreign_keys = ON")
            # Erased rows (delete, purge) are overwritten, not just unlinked.
            self.db.execute("PRAGMA secure_delete = ON")
            if str(path) != ":memory:":
                self.db.execute("PRAGMA journal_mode = WAL")
                # Safe with WAL (no corruption on power loss, at worst the last turn
                # is lost) and it spares an fsync per commit: a turn costs ~1 ms, not ~10.
                self.db.execute("PRAGMA synchronous = NORMAL")
            migrations.apply(self.db)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{path}: {e}") from None

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

    def write_error(self, error: sqlite3.Error) -> StoreError:
        text = str(error)
        if "readonly" in text or "read-only" in text:
            return StoreError(f"{self.path} is read-only: nothing can be stored "
                              "(check the file's and its folder's permissions)")
        if "locked" in text or "busy" in text:
            return StoreError(f"{self.path} is busy: another process held it for over "
                              f"{BUSY_TIMEOUT_MS // 1000} s; try again")
        return StoreError(f"{self.path}: {text}")

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, list(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _value(self, sql: str, params: Iterable[Any] = ()) -> Any:
        row = self.db.execute(sql, list(params)).fetchone()
        return row[0] if row else None
