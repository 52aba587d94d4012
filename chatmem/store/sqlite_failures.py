"""What a SQLite error is to the store: its kind, read from SQLite's result code, and a
cursor whose reads raise the store's errors too."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from chatmem.errors import StoreError, StoreFailure
from chatmem.store.permissions import missing_permission
from chatmem.store.result_codes import (
    BUSY,
    DISK_FAILED,
    FILE_REPLACED,
    NOT_A_DATABASE,
    extended_code,
    primary_code,
)

DAMAGED_TEXT = ("the history file is damaged (it holds text that is not UTF-8); "
                "`sqlite3 FILE 'PRAGMA integrity_check'` shows where")


def failure_of(error: BaseException) -> StoreFailure:
    """The kind of a SQLite error, by its result code (sqlite3 and sqlcipher3 alike)."""
    if isinstance(error, UnicodeDecodeError):
        return StoreFailure.DAMAGED  # SQLite hands back bytes that are not UTF-8 only then
    if isinstance(error, sqlite3.IntegrityError):
        return StoreFailure.CONFLICT
    code = primary_code(error)
    if extended_code(error) == FILE_REPLACED:
        return StoreFailure.REPLACED
    if code == sqlite3.SQLITE_READONLY:
        return StoreFailure.READ_ONLY
    if code in DISK_FAILED:
        return StoreFailure.DISK
    if code in BUSY:
        return StoreFailure.BUSY
    if code == sqlite3.SQLITE_CANTOPEN:
        return StoreFailure.CANNOT_OPEN
    if code in NOT_A_DATABASE:
        return StoreFailure.DAMAGED
    return StoreFailure.DRIVER


class _StatementErrors(Protocol):
    def statement_error(self, error: sqlite3.Error | UnicodeDecodeError) -> StoreError: ...


class SqliteCursor:
    """sqlite3's cursor, whose reads raise the store's errors too: a damaged page, or text
    that is not UTF-8, shows only when its row is read."""

    __slots__ = ("_backend", "_cursor")

    def __init__(self, cursor: sqlite3.Cursor, backend: _StatementErrors) -> None:
        self._cursor, self._backend = cursor, backend

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def fetchone(self) -> Any:
        try:
            return self._cursor.fetchone()
        except (sqlite3.Error, UnicodeDecodeError) as e:
            raise self._backend.statement_error(e) from None

    def fetchall(self) -> list[Any]:
        try:
            return self._cursor.fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as e:
            raise self._backend.statement_error(e) from None

    def __iter__(self) -> Iterator[Any]:
        rows = iter(self._cursor)
        while True:
            try:
                row = next(rows)
            except StopIteration:
                return
            except (sqlite3.Error, UnicodeDecodeError) as e:
                raise self._backend.statement_error(e) from None
            yield row




def upgrade_refused(path: Path, location: str) -> StoreError:
    """An older file that cannot be written: what it needs is an upgrade (not that nothing
    can be stored, which a read would not need)."""
    missing = missing_permission(path, write=True)
    return StoreError(f"{path} was written by an older chatmem and must be upgraded before use,"
                      " which needs write access: "
                      + (missing or "check the file's and its folder's permissions"),
                      kind=StoreFailure.READ_ONLY, location=location)


def replaced(path: Path, location: str) -> StoreError:
    # Writes would go to a file no longer at its path: stored, then lost unseen.
    return StoreError(f"{path} was deleted or replaced while this command had it open;"
                      " nothing was stored: run the command again",
                      kind=StoreFailure.REPLACED, location=location)
