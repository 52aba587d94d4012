"""What went wrong in SQLite, read from the error's result code rather than its wording.

sqlite3 and sqlcipher3 both set `sqlite_errorcode` (an extended code, whose
low byte is the primary one) on the errors they raise.
"""

from __future__ import annotations

import sqlite3

BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
"""Another connection holds the lock (SQLITE_LOCKED: one in this process)."""
NOT_A_DATABASE = frozenset({sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT})
DISK_FAILED = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR})
FILE_REPLACED = 1032
"""SQLITE_READONLY_DBMOVED (an extended code): the file was renamed over while open."""


def extended_code(error: BaseException) -> int | None:
    """The extended result code of a SQLite error, or None for one SQLite did not raise."""
    code = getattr(error, "sqlite_errorcode", None)
    return code if isinstance(code, int) else None


def primary_code(error: BaseException) -> int | None:
    """The primary result code of a SQLite error, or None for one SQLite did not raise."""
    code = extended_code(error)
    return None if code is None else code & 0xFF
