"""The connection the store's repositories share: which backend, the time, the write
transaction; and the two reads every repository runs (`fetch_rows`, `fetch_value`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, Self

from chatmem.errors import StoreError
from chatmem.store.backend import Backend
from chatmem.store.location import HistoryLocation, LocationKind, as_location
from chatmem.store.upgrading import UpgradeListener, ignore
from chatmem.timestamps import stamp, utc_now


def open_backend(location: HistoryLocation, key: str | None,
                 on_upgrade: UpgradeListener = ignore) -> Backend:
    """The backend `location` names: a PostgreSQL database, else a SQLite file (or ":memory:");
    `on_upgrade` hears that an older one is being upgraded, or that another chatmem's
    upgrade is waited for."""
    if location.kind is LocationKind.POSTGRESQL:
        if key is not None:
            raise StoreError("a key encrypts a SQLite history file; a PostgreSQL database "
                             "is protected by its server (unset CHATMEM_KEY and key_command)")
        # psycopg (the postgres extra) is imported on opening: its absence is a StoreError
        # with the install hint, raised there.
        from chatmem.store.postgres_backend import PostgresBackend

        return PostgresBackend(location, on_upgrade=on_upgrade)
    from chatmem.store.sqlite_backend import SqliteBackend

    return SqliteBackend(location.path, key=key, on_upgrade=on_upgrade)


def fetch_rows(db: Backend, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """The rows `sql` selects, each as a dict by column name."""
    cursor = db.execute(sql, list(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def fetch_value(db: Backend, sql: str, params: Iterable[Any] = ()) -> Any:
    """The first column of the first row `sql` selects; None for no row."""
    row = db.execute(sql, list(params)).fetchone()
    return row[0] if row else None


MERGE_PAGES = 50
"""Pages of the word index merged between two turns: more than a turn writes (a segment
of a few pages), so the merging keeps up."""


class Connection:
    """A chatmem database. Use as a context manager or call close()."""

    def __init__(self, location: HistoryLocation | Path | str, *, key: str | None = None,
                 clock: Callable[[], datetime] = utc_now,
                 on_upgrade: UpgradeListener = ignore) -> None:
        """`location` as settings parsed it; a Path is a file, and a string is parsed once
        by the one parser of locations (chatmem.config.location), never here."""
        self.clock = clock
        """What time it is for this store's timestamps; tests of retention set it."""
        where = as_location(location)
        self.db: Backend = open_backend(where, key, on_upgrade)
        self.path = where.path if where.kind is LocationKind.SQLITE else Path()
        """The history file (SQLite); a command may name another while showing an empty one."""
        self.shown_as: str | None = None
        """The database an empty stand-in shows (a URL without chatmem's tables yet)."""
        self.encrypted = self.db.encrypted

    @property
    def location(self) -> str:
        """What messages name: the file's path, or the database URL without its password."""
        if self.shown_as is not None:
            return self.shown_as
        return str(self.path) if self.db.kind == "sqlite" else self.db.location

    def now(self) -> str:
        return stamp(self.clock())

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self) -> AbstractContextManager[None]:
        """One write transaction, all or nothing, exclusive among writers."""
        return self.db.write()

    def check_writable(self, *, patient: bool = False) -> None:
        """Raise the error a write would meet, without writing: a turn checks before it is
        sent (`patient`: waiting for another process's write as its commit would)."""
        self.db.check_writable(patient=patient)

    def fold_log(self) -> None:
        """Fold the write-ahead log into the file (SQLite) as far as no reader holds it.

        Between turns: SQLite otherwise folds it inside whichever commit finds it
        1,000 pages long, one turn in thirty or so, and that turn takes several
        milliseconds more (an fsync, and the pages copied)."""
        self.db.fold_log(wait=False)

    def merge_word_segments(self) -> None:
        """Merge a little of the word index (SQLite), between turns.

        FTS5 writes a segment per commit and merges them inside whichever commit
        finds four on one level: one commit in about fifteen, and at 10,000 turns
        one in about sixty took 8–30 ms more. A few dozen pages merged after every
        turn keep each level below that (measured in docs/performance.md)."""
        self.db.merge_word_segments(MERGE_PAGES)

    def clear_log(self) -> None:
        """Fold the write-ahead log into the file and truncate it (waiting for readers)."""
        self.db.fold_log()

    def vacuum(self) -> None:
        """Rewrite the file so erased data leaves no trace in free pages or the WAL."""
        self.db.fold_log()
        self.db.execute("VACUUM")
        self.db.fold_log()
