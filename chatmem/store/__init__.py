"""The SQLite history file: the only package that speaks SQL.

One file holds sessions, their append-only messages, every turn as it was
sent, derived state (summaries, facts) and a full-text index. `Store` is the
whole surface; its table groups live in one module each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem.store.fork import DerivedGroup, ForkReport, ForkTables
from chatmem.store.images import ImageTables, StoredImage
from chatmem.store.leases import IndexLease, LeaseHolder, LeaseTables
from chatmem.store.logs import LogEntry, LogTables, ModelUsage
from chatmem.store.memory_state import MemoryTables
from chatmem.store.recall import (
    PendingText,
    PositionedVector,
    RecallTables,
    VectorRow,
    pause,
)
from chatmem.store.records import (
    FactHistoryRecord,
    FactRecord,
    FactScope,
    MessageRecord,
    SessionRecord,
    SummaryRecord,
    TurnRecord,
    TurnStatus,
    check_session_name,
    session_name_from,
)
from chatmem.store.redaction import Place, Redaction, RedactionTables
from chatmem.store.retention import ExpiredFact, RetentionTables, SessionEntry
from chatmem.store.turns import TurnTables


class Store(ForkTables, RetentionTables, TurnTables, MemoryTables, RecallTables,
            RedactionTables, LogTables, LeaseTables, ImageTables):
    """A chatmem database file. Use as a context manager or call close()."""


if TYPE_CHECKING:
    from chatmem.store import protocols

    def _is_every_repository(store: Store) -> tuple[
        protocols.HistoryRepository, protocols.MemoryStateRepository,
        protocols.FactRepository, protocols.VectorRepository, protocols.RecallRepository,
        protocols.SessionRepository, protocols.TurnRepository,
        protocols.RetentionRepository, protocols.RedactionRepository,
        protocols.MemoryStore, protocols.TurnStore, protocols.PrivacyStore,
    ]:
        """Never called: `mypy chatmem` fails here when Store stops implementing one."""
        return store, store, store, store, store, store, store, store, store, store, store, store


__all__ = [
    "DerivedGroup",
    "ExpiredFact",
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
    "SessionEntry",
    "SessionRecord",
    "Store",
    "StoredImage",
    "SummaryRecord",
    "TurnRecord",
    "TurnStatus",
    "VectorRow",
    "check_session_name",
    "pause",
    "session_name_from",
]
