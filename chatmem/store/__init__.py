"""The SQLite history file: the only package that speaks SQL.

One file holds sessions, their append-only messages, every turn as it was
sent, derived state (summaries, facts) and a full-text index. `Store` is a small
facade: the connection (its write transaction, clock and location) and one repository
per table group, each in its own module and built once over that connection:
`store.sessions`, `store.history` (messages), `store.turns`, `store.memory` (strategy
state, summaries), `store.facts`, `store.recall`, `store.vectors`, `store.leases`,
`store.images`, `store.forks`, `store.retention`, `store.redactions`, `store.logs`.
A repository that needs another is handed it; none reaches into another's privates.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Self

from chatmem.store.connection import Connection
from chatmem.store.fact_tables import FactTables
from chatmem.store.fork import DerivedGroup, ForkReport, ForkTables
from chatmem.store.images import ImageTables, StoredImage
from chatmem.store.leases import IndexLease, LeaseHolder, LeaseTables
from chatmem.store.location import HistoryLocation, LocationKind
from chatmem.store.logs import LogEntry, LogTables, ModelUsage
from chatmem.store.memory_state import MemoryTables
from chatmem.store.messages import MessageTables
from chatmem.store.recall import RecallTables, pause
from chatmem.store.records import (
    FactHistoryRecord,
    FactRecord,
    FactScope,
    MessageRecord,
    SessionRecord,
    SessionSummary,
    SummaryRecord,
    TurnRecord,
    TurnStatus,
)
from chatmem.store.redaction import RedactionTables
from chatmem.store.redaction_plan import Place, Redaction, RewritePlan
from chatmem.store.retention import ExpiredFact, ExpiryCause, RetentionTables, SessionEntry
from chatmem.store.session_names import check_session_name, session_name_from, session_name_of
from chatmem.store.sessions import SessionTables
from chatmem.store.turns import TurnTables
from chatmem.store.upgrading import UpgradeListener, ignore
from chatmem.store.vectors import PendingText, PositionedVector, VectorRow, VectorTables
from chatmem.timestamps import utc_now


class Store:
    """A chatmem database: one connection and the repositories built over it once.
    Use as a context manager or call close()."""

    def __init__(self, location: HistoryLocation | Path | str, *, key: str | None = None,
                 clock: Callable[[], datetime] = utc_now,
                 on_upgrade: UpgradeListener = ignore) -> None:
        """`on_upgrade` hears that an older history is being upgraded as it opens, or
        that opening waits for another chatmem's upgrade of it."""
        self.connection = connection = Connection(location, key=key, clock=clock,
                                                  on_upgrade=on_upgrade)
        self.db = connection.db
        self.history = MessageTables(connection)
        self.sessions = SessionTables(connection, self.history)
        self.turns = TurnTables(connection, self.sessions)
        self.memory = MemoryTables(connection)
        self.facts = FactTables(connection)
        self.recall = RecallTables(connection)
        self.vectors = VectorTables(connection)
        self.forks = ForkTables(connection, self.sessions, self.history, self.memory, self.turns)
        self.retention = RetentionTables(connection, self.sessions, self.facts)
        self.redactions = RedactionTables(connection)
        self.logs = LogTables(connection)
        self.leases = LeaseTables(connection)
        self.images = ImageTables(connection)

    @property
    def clock(self) -> Callable[[], datetime]:
        """What time it is for this store's timestamps."""
        return self.connection.clock

    @property
    def path(self) -> Path:
        """The history file (SQLite); a command may name another while showing an empty one."""
        return self.connection.path

    @classmethod
    def empty_standing_in(cls, where: HistoryLocation) -> Store:
        """An empty history in memory that names `where`: what a reading command shows of a
        history with nothing stored yet (a file not created, a database without chatmem's
        tables), writing nothing there."""
        store = cls(":memory:")
        if where.kind is LocationKind.SQLITE:
            store.connection.path = where.path  # what it names, and where a write would go
        else:
            store.connection.shown_as = where.shown
        return store

    @property
    def encrypted(self) -> bool:
        return self.connection.encrypted

    @property
    def location(self) -> str:
        """What messages name: the file's path, or the database URL without its password."""
        return self.connection.location

    def now(self) -> str:
        return self.connection.now()

    def write(self) -> AbstractContextManager[None]:
        """One write transaction, all or nothing, exclusive among writers."""
        return self.db.write()

    def check_writable(self, *, patient: bool = False) -> None:
        """Raise the error a write would meet, without writing: a turn checks before it is
        sent (`patient`: waiting for another process's write as its commit would)."""
        self.db.check_writable(patient=patient)

    def moved(self) -> bool:
        """Whether the history file this store opened is no longer at its path (deleted, or
        another renamed over it): what it reads is then no one's history."""
        return self.db.moved()

    def tidy(self, *, fold_log: bool) -> None:
        """Upkeep for between turns (SQLite): merge a little of the word index and, with
        `fold_log`, fold the write-ahead log into the file as far as no reader holds it.
        Connection.merge_word_segments and Connection.fold_log say why."""
        self.connection.merge_word_segments()
        if fold_log:
            self.connection.fold_log()

    def vacuum(self) -> None:
        """Rewrite the file so erased data leaves no trace in free pages or the WAL."""
        self.connection.vacuum()

    def clear_log(self) -> None:
        """Fold the write-ahead log into the file and empty it (SQLite), waiting for readers:
        with secure_delete, what a write erased then survives nowhere."""
        self.connection.clear_log()

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if TYPE_CHECKING:
    from chatmem.store import privacy_protocols, protocols

    def _is_every_repository(store: Store) -> tuple[
        protocols.HistoryRepository, protocols.SessionRepository, protocols.TurnRepository,
        protocols.MemoryStateRepository, protocols.FactRepository, protocols.RecallRepository,
        protocols.VectorRepository, protocols.LeaseRepository, protocols.ImageRepository,
        protocols.RetentionRepository, privacy_protocols.RedactionRepository,
        protocols.MemoryStore, protocols.TurnStore, privacy_protocols.PrivacyStore,
    ]:
        """Never called: `mypy chatmem` fails here when a repository stops implementing its
        Protocol, or the Store stops holding the repositories a consumer's Protocol names."""
        return (store.history, store.sessions, store.turns, store.memory, store.facts,
                store.recall, store.vectors, store.leases, store.images, store.retention,
                store.redactions, store, store, store)


__all__ = [
    "DerivedGroup",
    "ExpiredFact",
    "ExpiryCause",
    "FactHistoryRecord",
    "FactRecord",
    "FactScope",
    "ForkReport",
    "IndexLease",
    "LeaseHolder",
    "LogEntry",
    "MessageRecord",
    "ModelUsage",
    "PendingText",
    "Place",
    "PositionedVector",
    "Redaction",
    "RewritePlan",
    "SessionEntry",
    "SessionRecord",
    "SessionSummary",
    "Store",
    "StoredImage",
    "SummaryRecord",
    "TurnRecord",
    "TurnStatus",
    "VectorRow",
    "check_session_name",
    "pause",
    "session_name_from",
    "session_name_of",
]
