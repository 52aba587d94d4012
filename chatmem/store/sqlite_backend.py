"""The SQLite backend: a history file (plain or SQLCipher), its pragmas, schema and FTS5 index.

Every sqlite3 error that leaves it is a StoreError (chatmem.errors) with a kind read from
SQLite's result code: the rest of chatmem never sees the driver.
"""

from __future__ import annotations

import gc
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chatmem.errors import (
    DatabaseError,
    NotChatmemDatabase,
    StoreConflict,
    StoreError,
    StoreFailure,
    WrongThread,
)
from chatmem.history_notices import WaitingForWrite
from chatmem.store import open_files, upgrading
from chatmem.store.permissions import missing_permission
from chatmem.store.records import OWNED, SessionAccess
from chatmem.store.result_codes import BUSY, NOT_A_DATABASE, primary_code
from chatmem.store.session_runs import SessionRuns
from chatmem.store.sqlite_failures import (
    DAMAGED_TEXT,
    SqliteCursor,
    failure_of,
    replaced,
)
from chatmem.store.sqlite_files import (
    BUSY_TIMEOUT_MS,
    check_key,
    check_room,
    create_private_file,
    file_identity,
    filesystem_top,
    found_full,
    let_go,
    log_identity,
    other_names,
    restart_log,
    return_freed_memory,
    room_found,
    shell_word,
    special_file,
    wait_for,
    was_found_full,
)
from chatmem.store.sqlite_opening import SqliteOpening
from chatmem.store.sqlite_words import SqliteWords
from chatmem.store.upgrading import FIRST_WAIT_MS, WRITE_WAIT_S, UpgradeListener
from chatmem.store.word_counts import WordCounts

WAIT_STEP_MS = 1000
"""A patient write's wait for the lock, a step at a time (`SqliteBackend._begin`)."""


class SqliteBackend(SqliteOpening, SqliteWords):
    """A history file, opened, checked and migrated.

    Opening a new or older file creates or upgrades its schema in one write
    transaction, so a process killed meanwhile leaves the file as it was, and
    processes opening it at the same moment wait for each other. An older file is
    upgraded only while no other connection has it open (chatmem.store.upgrading).
    """

    kind = "sqlite"
    ranks_vectors = False
    """No vector index: recall ranks the stored arrays in numpy."""
    own_rows_first = ""
    own_rows = "1 = 1"
    shared_by = "NULL"
    busy_timeout_ms = BUSY_TIMEOUT_MS

    def __init__(self, path: str | Path, *, key: str | None = None,
                 on_upgrade: UpgradeListener = upgrading.ignore) -> None:
        self.path = Path(path)
        self._on_upgrade = on_upgrade
        self.location = str(path)
        in_memory = str(path) == ":memory:"
        self._release: Callable[[], None] = lambda: None
        """Uncounts this connection from the files the process holds (open_files)."""
        self._thread = threading.get_ident()
        """The thread that opened it, the only one sqlite3 lets use it (`_on_its_thread`)."""
        if in_memory:
            key = None
        else:
            special = special_file(self.path)
            if special is not None:
                # SQLite would say "disk I/O error" of a directory, wait for ever for a FIFO's
                # writer, and call a device's refused write a full disk (a journal beside it).
                raise StoreError(f"{self.path} is {special}, not a history file")
            if others := other_names(self.path):
                raise StoreError(
                    f"{self.path} has {others + 1} names (hard links), and chats opening it by"
                    " different names lose each other's turns: keep this one and remove the"
                    f" other{'s' if others > 1 else ''} (`find"
                    f" {shell_word(filesystem_top(self.path))} -xdev -samefile"
                    f" {shell_word(self.path)}` lists them)")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"{self.path}: cannot create its folder: {e.strerror}") from None
            from chatmem.store import cipher

            # A copy left by a killed encrypt/decrypt/rekey holds the whole history.
            cipher.remove_abandoned_conversions(self.path)
            with open_files.OPENING:  # no connection of this process opens meanwhile
                key = check_key(self.path, key)
                create_private_file(self.path)
                self._release = open_files.hold(self.path,
                                                "plain" if key is None else "encrypted")
        try:
            self._open(path, key, in_memory)
        except BaseException:
            self._release()
            raise

    def _open(self, path: str | Path, key: str | None, in_memory: bool) -> None:
        self.encrypted = key is not None
        self._opening = True
        """Until the file is checked and migrated, a failing statement is an opening error."""
        self._writing = 0
        """How deep in write(): a statement failing there fails the write (write_error)."""
        self._merges_from_two = False
        """Whether this connection has set the word index's `usermerge` (merge_word_segments)."""
        self._session_runs = SessionRuns.of(self.location)
        self._word_counts = WordCounts()
        """Word counts this connection made (`_count_entries`), kept while it is open."""
        self._identity = None if in_memory else file_identity(self.path)
        """The file this connection opened, to tell when another has taken its path."""
        self._gone = False  # the file left its path: this connection was let go (`moved`)
        self._log: tuple[int, int, int, int] | None = None  # the -wal as last left (let_go)
        # Refuse foreign or newer files before writing a single byte to them.
        pending = self._connect_waiting(path, key)
        try:
            if not in_memory:
                wait_for(lambda: self.conn.execute("PRAGMA journal_mode = WAL"))
            self._migrate(pending, lambda: self._connect_waiting(path, key))
            self._note_log()
        except sqlite3.DatabaseError as e:
            self.conn.close()
            raise self._open_error(e) from None
        except BaseException:
            self.conn.close()
            raise
        self._opening = False

    def execute(self, sql: str, params: Sequence[Any] = ()) -> SqliteCursor:
        try:
            return SqliteCursor(self.conn.execute(sql, params), self)
        except (sqlite3.Error, UnicodeDecodeError) as e:
            raise self.statement_error(e) from None

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            self.conn.executemany(sql, rows)
        except sqlite3.Error as e:
            raise self.statement_error(e) from None

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def close(self) -> None:
        """Close the connection, from any thread, and let go of the file."""
        try:
            if threading.get_ident() == self._thread:
                self.conn.close()
            else:
                # sqlite3 closes a connection only on its own thread, but frees (and closes)
                # one no longer referenced on any: a program closing its Workspace from
                # another thread is not left with a raw error and the file held open. Its
                # statement cache refers back to it, so only a collection frees it.
                self.conn = sqlite3.connect(":memory:")
                self.conn.close()
                self.sqlite.conn = self.conn
                gc.collect()
        finally:
            self._release()

    def _on_its_thread(self, error: sqlite3.Error | UnicodeDecodeError) -> None:
        """Raise WrongThread when `error` is sqlite3 refusing the thread it was used on: the
        check is the connection's own, so a statement on the right thread costs nothing."""
        if (isinstance(error, sqlite3.ProgrammingError)
                and threading.get_ident() != self._thread):
            raise WrongThread(self.location) from None

    def _value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.execute(sql, params).fetchone()
        return row[0] if row else None

    # -- opening ------------------------------------------------------------------------

    def _open_error(self, error: sqlite3.Error) -> StoreError:
        code = primary_code(error)
        if code == sqlite3.SQLITE_CANTOPEN:
            missing = missing_permission(self.path, write=False)
            if missing is not None:
                return StoreError(f"{self.path}: cannot open it: {missing}",
                                  kind=StoreFailure.CANNOT_OPEN, location=self.location)
            # WAL readers need to create the -shm file beside the database.
            return StoreError(
                f"{self.path}: cannot open it: SQLite needs to write {self.path.name}-wal and "
                f"{self.path.name}-shm beside it (is the folder read-only?)",
                kind=StoreFailure.CANNOT_OPEN, location=self.location,
            )
        if code == sqlite3.SQLITE_CORRUPT:
            # A SQLite file (one that is not says NOTADB) broken inside: most likely the
            # user's own history cut short or damaged, which "not a chatmem database" hid.
            return DatabaseError(
                f"{self.path} is damaged ({error}): restore it from a backup (`sqlite3 "
                f"{shell_word(self.path)} 'PRAGMA integrity_check'` shows where)",
                kind=StoreFailure.DAMAGED, location=self.location, reason=str(error))
        if code in NOT_A_DATABASE:
            return NotChatmemDatabase(f"{self.path} is not a chatmem database ({error})",
                                      location=self.location)
        return self.write_error(error)

    def statement_error(self, error: sqlite3.Error | UnicodeDecodeError) -> StoreError:
        """A statement's driver error as the store's: what opening or a write makes of it,
        else (a statement refused, a damaged row) a DatabaseError of its kind; WrongThread
        raised when it was run on a thread other than the connection's."""
        self._on_its_thread(error)
        if self._gone:
            return replaced(self.path, self.location)
        if self._opening and isinstance(error, sqlite3.DatabaseError):
            return self._open_error(error)
        if self._writing and isinstance(error, sqlite3.OperationalError):
            return self.write_error(error)  # a write's own failure (busy, disk, read-only)
        if isinstance(error, UnicodeDecodeError):
            return DatabaseError(DAMAGED_TEXT, kind=StoreFailure.DAMAGED,
                                 location=self.location)
        failure = StoreConflict if isinstance(error, sqlite3.IntegrityError) else DatabaseError
        return failure(f"database error: {error}", kind=failure_of(error),
                       location=self.location, reason=str(error))

    # -- writing ------------------------------------------------------------------------

    @contextmanager
    def write(self, *, patient: bool = False, replied: bool = True) -> Iterator[None]:
        """One write transaction, all or nothing, taking the write lock up front.

        A deferred BEGIN (sqlite-utils' atomic) that reads first and then writes
        fails at once with "database is locked" when another process committed
        meanwhile: WAL cannot upgrade a stale read. BEGIN IMMEDIATE waits for the
        lock instead (busy timeout), so two chats on one file both keep every turn.
        `patient`: a turn's write (its reply, paid for) waits for the lock up to
        WRITE_WAIT_S, not the busy timeout (`_begin`).
        """
        if self.conn.in_transaction:
            try:
                with self.sqlite.atomic():
                    yield
            except sqlite3.Error as e:  # the savepoint's own statements
                raise self.statement_error(e) from None
            return
        self._begin(patient, replied=replied)
        with self._committing(after=self._note_log):
            yield

    def _begin(self, patient: bool, *, replied: bool) -> None:
        """BEGIN IMMEDIATE. `patient`: past a short first wait the listener is told once
        that it waits for another process's write, then it waits up to WRITE_WAIT_S in
        steps of a second, so that a Ctrl-C is heard between them (SQLite's own wait
        does not return to Python until it ends)."""
        waited_s = BUSY_TIMEOUT_MS // 1000

        def wait() -> None:
            nonlocal waited_s
            waited_s = WRITE_WAIT_S  # a busy failure from now on gives up the long wait
            self._on_upgrade(WaitingForWrite(self.location, WRITE_WAIT_S, replied))
            self.conn.execute(f"PRAGMA busy_timeout = {WAIT_STEP_MS}")

        try:
            if not patient:
                self.conn.execute("BEGIN IMMEDIATE")
                return
            self.conn.execute(f"PRAGMA busy_timeout = {min(FIRST_WAIT_MS, self.busy_timeout_ms)}")
            try:
                upgrading.waiting_while_busy(
                    lambda waited: self.conn.execute("BEGIN IMMEDIATE"),
                    lambda e: isinstance(e, sqlite3.OperationalError)
                    and primary_code(e) in BUSY, wait, WRITE_WAIT_S)
            finally:
                self.conn.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
        except sqlite3.Error as e:
            raise self.write_error(e, waited_s=waited_s) from None

    def session_access(self, session_id: int) -> SessionAccess | None:
        """Every session of a file is its user's own."""
        return OWNED

    @property
    def identity(self) -> tuple[int, int] | None:
        return None if self._gone else self._identity

    def moved(self) -> bool:
        """Whether the file this connection opened is no longer at its path (deleted, or
        another renamed over it: an encrypt, decrypt or new key, a restore). Seen so, the
        connection is let go at once (sqlite_files.let_go)."""
        if self._gone:
            return True
        if self._identity is None or file_identity(self.path) == self._identity:
            return False
        self._gone = True
        let_go(self.conn, self.path, self._log)
        return True

    def _note_log(self) -> None:
        self._log = None if self._identity is None else log_identity(self.path)

    def check_writable(self, *, patient: bool = False) -> None:
        """Raise the error a write would meet, without writing: a turn checks before it is sent.

        Takes the write lock and attempts a write that changes no row, then rolls back.
        `patient`: waits for another process's write as a reply's commit does (`_begin`).
        """
        if self._gone:
            raise replaced(self.path, self.location)
        if self.conn.in_transaction:
            return
        if self.moved():
            raise replaced(self.path, self.location)
        if was_found_full(self._identity):  # by any connection of this process
            check_room(self.conn, self.path)
            room_found(self._identity)
        self._begin(patient, replied=False)
        try:
            try:
                self.conn.execute("UPDATE chatmem_meta SET value = value WHERE 1 = 0")
            finally:
                self.conn.execute("ROLLBACK")
        except sqlite3.Error as e:
            raise self.write_error(e) from None

    def write_error(self, error: sqlite3.Error, *, waited_s: int = BUSY_TIMEOUT_MS // 1000
                    ) -> StoreError:
        """What stopped a write, said by the kind of its error (not its wording); `waited_s`:
        how long it waited for another process's lock."""
        self._on_its_thread(error)
        if self._gone:
            return replaced(self.path, self.location)
        kind = failure_of(error)
        if kind is StoreFailure.READ_ONLY:
            missing = missing_permission(self.path, write=True)
            message = f"{self.path} is read-only: nothing can be stored" + (
                f"; {missing}" if missing else " (check the file's and its folder's permissions)")
        elif kind is StoreFailure.REPLACED:
            message = (f"{self.path} was replaced while this command had it open (an encrypt,"
                       " decrypt or new key finished meanwhile); nothing was stored: run the"
                       " command again")
        elif kind is StoreFailure.DISK:
            found_full(self._identity)  # check_writable looks for room first from now on
            message = (f"{self.path}: the disk is full or failing; nothing was changed"
                       " (free some space and try again)")
        elif kind is StoreFailure.BUSY:
            return upgrading.held_too_long(str(self.path), waited_s, self.location)
        else:
            message = f"{self.path}: {error}"
        return StoreError(message, kind=kind, location=self.location)

    # -- the dialect ----------------------------------------------------------------------

    def nearest_vectors(self, model: str, dimensions: int, session_id: int,
                        last_position: int, query: Sequence[float],
                        limit: int) -> list[int] | None:
        """None: SQLite has no vector index, recall ranks the stored arrays itself."""
        return None

    def fold_log(self, *, wait: bool = True) -> None:
        try:
            busy, logged, folded = self.execute(
                f"PRAGMA wal_checkpoint({'TRUNCATE' if wait else 'PASSIVE'})").fetchone()
        except StoreError as e:
            if wait or e.kind is not StoreFailure.DISK:
                raise
            # Between turns: what the log holds stays stored in it. The turn just shown
            # was followed by "database error: disk I/O error"; the next turn is refused
            # before it is sent if the disk is still full (check_room).
            found_full(self._identity)
            return
        if not wait and not busy and 0 < logged == folded:
            restart_log(self.conn, self.busy_timeout_ms)
        self._note_log()

    def let_go_of_read_pages(self) -> None:
        self.execute("PRAGMA shrink_memory")
        return_freed_memory()

    def has_column(self, table: str, column: str) -> bool:
        return any(r[1] == column for r in self.execute(f"PRAGMA table_info({table})"))
