"""A history in a PostgreSQL database: the store's Backend over psycopg 3.

The connection is in autocommit: a read is its own statement and `write()`
is one transaction that first takes a transaction-scoped advisory lock, so
writers queue as on SQLite's BEGIN IMMEDIATE and a process killed mid-write
leaves nothing of it. Statements use `?` placeholders (translated once per
SQL text). Every message names the database by its masked URL: the password
never appears in an error, a log or a traceback. Every psycopg error that leaves
it is a StoreError (chatmem.errors) of its kind: the rest of chatmem never sees
the driver.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from chatmem import install_hint
from chatmem.errors import (
    StoreError,
    StoreFailure,
    WrongThread,
)
from chatmem.history_notices import WaitingForWrite
from chatmem.store import postgres_upgrading as upgrading
from chatmem.store.location import HistoryLocation, LocationKind, as_location, password_of
from chatmem.store.postgres_access import shared
from chatmem.store.postgres_failures import PostgresFailures, connect_hint, driver_reason
from chatmem.store.postgres_opening import PostgresOpening
from chatmem.store.postgres_placeholders import translate
from chatmem.store.postgres_text import keep_nul_characters
from chatmem.store.postgres_upgrading import WRITE_LOCK
from chatmem.store.postgres_vectors import PostgresVectors
from chatmem.store.postgres_words import PostgresWords
from chatmem.store.records import AccessLevel, SessionAccess
from chatmem.store.upgrading import (
    WRITE_WAIT_S,
    UpgradeListener,
    held_too_long,
    ignore,
)

BUSY_TIMEOUT_MS = 5000
CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_MS = 300_000
"""How long the server may work on one statement when neither the role, the database nor the
URL set a statement_timeout: a server stuck (its disk, a lock lock_timeout does not cover)
ends the turn in one line instead of hanging it. chatmem's statements take milliseconds;
migrations, whose index rebuilds may take longer, lift it for their transaction."""
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10,
              "keepalives_count": 3, "tcp_user_timeout": 60_000}
"""libpq's TCP settings unless the URL sets them: a server host gone (powered off, the network
cut) ends the connection after about a minute, not when the kernel gives up (hours)."""

# psycopg logs, then closes the connection, when a Ctrl-C's cancel does not stop the
# statement (a frozen server); the interrupt itself is what the user is told of, in
# chatmem's words, and the next statement connects anew.
logging.getLogger("psycopg").addHandler(logging.NullHandler())
_READ = re.compile(r"\s*(SELECT|SHOW)\b", re.IGNORECASE)
"""A statement that only reads (chatmem's SELECTs change nothing)."""


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        return None
    return psycopg


def available() -> bool:
    return _driver() is not None


class PostgresBackend(PostgresOpening, PostgresFailures, PostgresVectors, PostgresWords):
    """A chatmem database on a PostgreSQL server. Use as a context manager or call close().

    Opening a new database creates its schema in one transaction under the
    write lock, so two first users cannot both migrate it.
    """

    kind = "postgresql"
    ranks_vectors = False
    """Whether pgvector finds the nearest vectors here (else recall ranks them in numpy)."""
    encrypted = False
    """Encryption at rest is the server's (its disk); the connection uses TLS off the machine."""

    def __init__(self, location: HistoryLocation | str, *,
                 busy_timeout_ms: int = BUSY_TIMEOUT_MS,
                 statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
                 on_upgrade: UpgradeListener = ignore) -> None:
        where = as_location(location)
        self._on_upgrade = on_upgrade
        if where.kind is not LocationKind.POSTGRESQL:
            raise StoreError(f"{where.shown}: not a postgresql:// URL")
        self.location = where.shown
        self.busy_timeout_ms = busy_timeout_ms
        self.statement_timeout_ms = statement_timeout_ms
        psycopg = _driver()
        if psycopg is None:
            raise StoreError(f"{self.location}: a PostgreSQL history needs psycopg: "
                             f"{install_hint('postgres')}", kind=StoreFailure.CANNOT_OPEN,
                             location=self.location)
        self._errors = psycopg
        self._writing = 0
        """How deep in write(): there a failure of the database fails the write."""
        # A name may be the user's own session and one another user shared with them.
        self.own_rows_first = "owner <> current_user, "
        self.own_rows = "owner = current_user"
        self.shared_by = "NULLIF(owner, current_user)"
        errors = psycopg.errors
        # What makes the database unusable for a write (not a bug, not a constraint).
        self._store_failures: tuple[type[BaseException], ...] = (
            psycopg.OperationalError, psycopg.InternalError, errors.InsufficientPrivilege)
        # The password in the URL, or the one libpq reads from PGPASSWORD (a password file
        # or a service file it reads itself and never quotes).
        self._secret = tuple(filter(None, (password_of(where.target),
                                           os.environ.get("PGPASSWORD"))))
        self.observe: Callable[[str, Sequence[Any], Any], None] | None = None
        """Called after each statement with its SQL, parameters and cursor (store/meter.py
        counts the work with it)."""
        self._target = where.target
        self._thread = threading.get_ident()  # the only one to use it (`_reconnect_if_lost`)
        self._statement_timeout = "0"
        self._own_statement_timeout = False
        self._conn = self._connect()
        try:
            self._migrate()
            self.ranks_vectors = self._has_vector_copies()
            self._indexed: set[int] = set()
        except psycopg.Error as e:
            failure = self.error(e)  # before closing: a closed connection reads as lost
            self._conn.close()
            raise failure from None
        except BaseException:
            self._conn.close()
            raise

    def _connect(self) -> Any:
        psycopg = self._errors
        try:
            given = psycopg.conninfo.conninfo_to_dict(self._target)
            conn = psycopg.connect(self._target, autocommit=True,
                                   connect_timeout=CONNECT_TIMEOUT_S,
                                   fallback_application_name=upgrading.MARK,
                                   **{k: v for k, v in KEEPALIVES.items() if k not in given})
        except psycopg.Error as e:
            reason = driver_reason(e, self._secret)
            raise StoreError(f"{self.location}: cannot connect: {reason}{connect_hint(reason)}",
                             kind=StoreFailure.CANNOT_OPEN, location=self.location) from None
        keep_nul_characters(conn)
        try:
            # The statement_timeout a role, the database or the URL sets is kept (and named
            # when it fires); chatmem's is set only where none is.
            _, self._statement_timeout, source = conn.execute(
                "SELECT set_config('lock_timeout', %s, false),"
                " current_setting('statement_timeout'),"
                " (SELECT source FROM pg_settings WHERE name = 'statement_timeout')",
                (str(int(self.busy_timeout_ms)),)).fetchone()
            self._own_statement_timeout = source == "default" and self.statement_timeout_ms > 0
            if self._own_statement_timeout:
                self._statement_timeout = str(conn.execute(
                    "SELECT set_config('statement_timeout', %s, false)",
                    (str(int(self.statement_timeout_ms)),)).fetchone()[0])
        except psycopg.Error as e:
            failure = (self._cancelled(e) if isinstance(e, psycopg.errors.QueryCanceled) else
                       StoreError(f"{self.location}: cannot connect: "
                                  f"{driver_reason(e, self._secret)}",
                                  kind=StoreFailure.CANNOT_OPEN, location=self.location))
            conn.close()
            raise failure from None
        return conn

    def _reconnect_if_lost(self) -> None:
        """A connection the server dropped (a restart) is opened anew before the next
        statement outside a write: the statement that met the loss failed and said so (its
        transaction rolled back with it), and is never run twice. A chat or a server then
        goes on once the database is back, as its error said it would. Before each
        statement: on another thread than the one that opened it, WrongThread (two threads'
        transactions would interleave on the one connection, as SQLite's refuses)."""
        if threading.get_ident() != self._thread:
            raise WrongThread(self.location)
        if self._conn.closed and not self._writing:
            self._conn = self._connect()
            if self.ranks_vectors:
                self._tune_vector_search()

    # -- statements -----------------------------------------------------------------------

    def _connected_again(self, error: BaseException) -> bool:
        """Whether `error` is a connection the server dropped while idle (a restart), met
        outside any write, and a new one is now open: what only reads may be run again on."""
        if self._writing or not (self._conn.closed
                                 or isinstance(error, self._errors.errors.AdminShutdown)):
            return False
        self._conn.close()
        self._reconnect_if_lost()
        return True

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        self._reconnect_if_lost()
        # psycopg reads a statement's rows as it runs it: fetching them raises nothing.
        try:
            cursor = self._conn.execute(translate(sql), tuple(params))
        except self._errors.Error as e:
            if not (_READ.match(sql) and self._connected_again(e)):
                raise self.statement_error(e) from None
            try:  # a read: nothing of it to run twice
                cursor = self._conn.execute(translate(sql), tuple(params))
            except self._errors.Error as again:
                raise self.statement_error(again) from None
        if self.observe is not None:
            self.observe(sql, params, cursor)
        return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._reconnect_if_lost()
        rows = [tuple(r) for r in rows]
        try:
            with self._conn.cursor() as cursor:
                cursor.executemany(translate(sql), rows)
                if self.observe is not None:
                    # Its first parameters, as a single statement's: what plans it.
                    self.observe(sql, rows[0] if rows else (), cursor)
        except self._errors.Error as e:
            raise self.statement_error(e) from None

    def _value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.execute(sql, params).fetchone()
        return row[0] if row else None

    @property
    def in_transaction(self) -> bool:
        status = self._conn.info.transaction_status
        return bool(status != self._errors.pq.TransactionStatus.IDLE)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PostgresBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing --------------------------------------------------------------------------

    @contextmanager
    def write(self, *, patient: bool = False, replied: bool = True) -> Iterator[None]:
        """One write transaction, all or nothing, holding the write lock until it ends.

        Nested use is a savepoint inside the outer transaction. `patient`: a turn's write
        waits for the lock up to WRITE_WAIT_S (Backend.write).
        """
        self._reconnect_if_lost()
        nested = self.in_transaction  # then a savepoint; the outer transaction holds the lock
        self._writing += 1
        try:
            with self._conn.transaction():
                if not nested:
                    self._lock(patient, replied=replied)
                yield
        except self._errors.Error as e:  # the transaction's own statements (COMMIT)
            raise self.statement_error(e) from None
        finally:
            self._writing -= 1

    def moved(self) -> bool:
        return False  # a server's database has no path another file could take

    @property
    def identity(self) -> None:
        return None  # what a connection reads depends on its role (row security)

    def _lock(self, patient: bool, *, replied: bool) -> None:
        if not patient:
            # Tried first: when it is held, who holds it is read while the transaction still
            # can, to be named if the wait gives up (any role may take it: a write share's
            # grantee, any login role while the database lets PUBLIC connect).
            if self._conn.execute("SELECT pg_try_advisory_xact_lock(%s)",
                                  (WRITE_LOCK,)).fetchone()[0]:
                return
            holder = upgrading.lock_holder(self._conn, WRITE_LOCK)
            try:
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            except self._errors.errors.LockNotAvailable:
                raise held_too_long(self.location, self.busy_timeout_ms / 1000, self.location,
                                    holder) from None
            return
        try:
            upgrading.take_write_lock(self._conn, WRITE_LOCK, self.busy_timeout_ms,
                                      self._on_upgrade,
                                      WaitingForWrite(self.location, WRITE_WAIT_S, replied))
        except self._errors.errors.LockNotAvailable:
            # Given up after WRITE_WAIT_S, not the busy timeout the driver's error names.
            raise held_too_long(self.location, WRITE_WAIT_S, self.location) from None

    def check_writable(self, *, patient: bool = False) -> None:
        """Raise the error a write would meet, without writing: a turn checks before it is sent."""
        self._reconnect_if_lost()
        if self.in_transaction:
            return
        for attempt in (1, 2):
            try:
                with self._conn.transaction(force_rollback=True):
                    self._lock(patient, replied=False)
                    self._conn.execute("UPDATE sessions SET name = name WHERE 1 = 0")
                return
            except self._errors.Error as e:
                # Rolled back whatever happens: checked again on a new connection once,
                # so a turn after a server restart meanwhile is not refused for it.
                if attempt == 1 and self._connected_again(e):
                    continue
                if isinstance(e, self._store_failures):
                    raise self.error(e) from None
                raise self.statement_error(e) from None

    # -- the dialect ----------------------------------------------------------------------

    def fold_log(self, *, wait: bool = True) -> None:
        """Nothing to fold: the server keeps its own write-ahead log."""

    def merge_word_segments(self, pages: int) -> None:
        """Nothing to merge: the server's indexes take each row as it comes."""

    def let_go_of_read_pages(self) -> None:
        """Nothing to let go of: the server keeps its own cache."""

    def session_access(self, session_id: int) -> SessionAccess | None:
        """Its owner's, shared for writing by its owner, or shared read-only (postgres_access
        holds the same rule as row-level security)."""
        row = self.execute(
            f"SELECT s.owner, s.owner = current_user, {shared('s.id', 's.owner', write=True)},"
            " current_user FROM sessions s WHERE s.id = ?", [session_id]).fetchone()
        if row is None:
            return None
        owner, own, write, role = row
        level = AccessLevel.OWN if own else AccessLevel.WRITE if write else AccessLevel.READ
        return SessionAccess(level, str(owner), str(role))

    def has_column(self, table: str, column: str) -> bool:
        return bool(self._value(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema ="
            " current_schema() AND table_name = ? AND column_name = ?", [table, column]))
