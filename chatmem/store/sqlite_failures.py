"""What a SQLite error is to the store: its kind, read from SQLite's result code, and a
cursor whose reads raise the store's errors too."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any, Protocol

from chatmem.errors import StoreError, StoreFailure
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


