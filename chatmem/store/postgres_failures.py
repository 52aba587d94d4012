"""How the PostgreSQL backend says what went wrong: every psycopg error as a StoreError of
its kind, in one line naming the database by its masked URL (never its password)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from chatmem.errors import DatabaseError, StoreConflict, StoreError, StoreFailure
from chatmem.store.upgrading import held_too_long


def driver_reason(error: BaseException, secrets: Sequence[str]) -> str:
    """The first line of a driver error, any password in it masked."""
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    for secret in secrets:
        # A short password ("p") is masked as a word, not inside "port".
        pattern = re.escape(secret) if len(secret) >= 4 else rf"(?<!\w){re.escape(secret)}(?!\w)"
        text = re.sub(pattern, "***", text)
    return text


# What to do about a connection the server or libpq refused, by the words of its first
# line (libpq's connection errors carry no SQLSTATE): the driver's own line says what
# happened, this says what the person who typed the command does next.
_CONNECT_HINTS = (
    (re.compile(r"no password supplied"),
     "give the role's password in ~/.pgpass, PGPASSWORD or a service file "
     "(README: PostgreSQL)"),
    (re.compile(r"password authentication failed"),
     "check the password (~/.pgpass, PGPASSWORD, the service file or the URL)"),
    (re.compile(r'role "((?:[^"]|"")*)" does not exist'),
     "an administrator adds it: chatmem admin add-user {0} --db ADMIN-URL"),
    (re.compile(r'database "((?:[^"]|"")*)" does not exist'),
     "create it first (createdb, or CREATE DATABASE as an administrator), or check the URL"),
    (re.compile(r"permission denied for database|does not have CONNECT privilege"),
     "an administrator grants it: chatmem admin add-user ROLE --db ADMIN-URL"),
    (re.compile(r"server does not support SSL, but SSL was required"),
     "the server has no TLS, which chatmem asks of another machine's: set it up there, "
     "or add sslmode=disable to the URL only on a network you trust"),
    (re.compile(r"Connection refused|No such file or directory"),
     "is the server running there? check the URL's host and port"),
    (re.compile(r"timeout expired|could not translate host name|Name or service not known"),
     "check the URL's host, and that this machine can reach it"),
)


def connect_hint(reason: str) -> str:
    """The line to add to a failed connection's `reason`: what to do, or "" when the
    driver's line is all there is to say."""
    for pattern, hint in _CONNECT_HINTS:
        found = pattern.search(reason)
        if found:
            return "; " + hint.format(*(g.replace('""', '"') for g in found.groups()))
    return ""


class PostgresFailures:
    """The error methods of PostgresBackend."""

    location: str
    busy_timeout_ms: int
    _errors: Any
    _conn: Any
    _secret: tuple[str, ...]
    _statement_timeout: str
    _own_statement_timeout: bool
    _writing: int
    _store_failures: tuple[type[BaseException], ...]

    def statement_error(self, error: BaseException) -> StoreError:
        """A statement's driver error as the store's: a failure of the database (lost,
        busy, read-only, full; and, in a write, any that stops it) is said by `error`; a
        broken constraint is a StoreConflict; anything else a DatabaseError (its first line,
        no statement text)."""
        if isinstance(error, self._errors.OperationalError) or (
                self._writing and isinstance(error, self._store_failures)):
            return self.error(error)
        if self._conn.closed:
            return self.error(error)
        reason = driver_reason(error, self._secret)
        if isinstance(error, self._errors.IntegrityError):
            return StoreConflict(f"database error: {reason}", location=self.location,
                                 reason=reason)
        return DatabaseError(f"database error: {reason}", location=self.location, reason=reason)

    def error(self, error: BaseException) -> StoreError:
        """A driver error as one line naming the database (its password masked)."""
        errors = self._errors.errors
        where = self.location
        if isinstance(error, errors.QueryCanceled):
            return self._cancelled(error)
        if self._conn.closed or isinstance(error, errors.AdminShutdown):
            kind = StoreFailure.CONNECTION_LOST
            message = (f"{where}: the connection was lost; memory untouched "
                       "(nothing of this change was stored), try again")
        elif isinstance(error, errors.ReadOnlySqlTransaction):
            kind, message = StoreFailure.READ_ONLY, f"{where} is read-only: nothing can be stored"
        elif isinstance(error, errors.InsufficientPrivilege):
            kind = StoreFailure.NOT_PERMITTED
            message = (f"{where}: this role may not change that, nothing was stored "
                       f"({driver_reason(error, self._secret)})")
        elif isinstance(error, errors.LockNotAvailable):
            return held_too_long(where, self.busy_timeout_ms / 1000, where)
        elif isinstance(error, errors.DiskFull):
            kind = StoreFailure.DISK
            message = f"{where}: the server's disk is full; nothing was stored"
        else:
            kind, message = StoreFailure.OTHER, f"{where}: {driver_reason(error, self._secret)}"
        return StoreError(message, kind=kind, location=where)

    def _cancelled(self, error: BaseException) -> StoreError:
        """A statement the server cancelled: past the statement_timeout a role or the URL
        sets (chatmem's own waits for a lock end as LockNotAvailable), or by another
        session (pg_cancel_backend)."""
        where, reason = self.location, driver_reason(error, self._secret)
        limit = self._statement_timeout
        if limit in ("0", ""):
            return StoreError(f"{where}: the server cancelled a statement ({reason});"
                              " nothing of this change was stored", location=where,
                              reason=reason)
        if self._own_statement_timeout:
            said = (f"the server did not finish a statement within chatmem's limit ({limit});"
                    " nothing of this change was stored. Is the server stuck? A larger limit:"
                    " -c statement_timeout in the URL's options, or ALTER ROLE ... SET"
                    " statement_timeout")
        else:
            said = (f"the server cancelled a statement after its statement_timeout ({limit});"
                    " nothing of this change was stored, and trying again meets the same"
                    " limit: raise it (ALTER ROLE ... SET statement_timeout, or -c"
                    " statement_timeout in the URL's options) or reset it")
        return StoreError(f"{where}: {said}", kind=StoreFailure.TIMED_OUT, location=where,
                          reason=reason)
