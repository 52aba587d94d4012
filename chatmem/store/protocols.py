"""What history, memory and embeddings need of the store, by aggregate.

Each Protocol lists only the methods its callers use, so a module says how
little of the store it touches; `Store` implements every one
(tests/store/test_protocols.py checks it with mypy's eye on an assignment).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from chatmem.store.leases import IndexLease, LeaseHolder
from chatmem.store.recall import PendingText, VectorRow
from chatmem.store.records import FactHistoryRecord, MessageRecord, SummaryRecord


class HistoryRepository(Protocol):
    """A session's messages and their cached token counts."""

    def messages(self, session_id: int, first_turn: int = 1,
                 last_turn: int | None = None) -> list[MessageRecord]: ...

    def turn_count(self, session_id: int) -> int: ...

    def cached_token_counts(self, message_ids: Iterable[int],
                            tokenizer: str) -> dict[int, int]: ...


class MemoryStateRepository(Protocol):
    """A strategy's own state and summaries."""

    def write(self) -> AbstractContextManager[None]: ...

    def strategy_state(self, session_id: int, strategy: str) -> dict[str, Any]: ...

    def set_strategy_state(self, session_id: int, strategy: str,
                           values: Mapping[str, Any]) -> None: ...

    def strategy_state_values(self, key: str,
                              session_id: int | None = None) -> list[tuple[int, str, Any]]: ...

    def summaries(self, session_id: int, strategy: str | None = None) -> list[SummaryRecord]: ...


class FactRepository(Protocol):
    """Facts' provenance and the turns that showed them."""

    def session_names(self, session_ids: Iterable[int]) -> dict[int, str]: ...

    def fact_history(self, fact_ids: list[int]) -> dict[int, list[FactHistoryRecord]]: ...

    def turn_contexts_with(self, kind: str) -> list[tuple[int, dict[str, Any], str | None]]: ...

    def rewrite_turn_context(self, turn_id: int, context: Mapping[str, Any],
                             rendered_prompt: str | None) -> None: ...


class VectorRepository(Protocol):
    """Message vectors per embedding model, and the messages still without them."""

    def last_position(self, session_id: int) -> int: ...

    def count_without_vectors(self, model: str, session_id: int | None = None) -> int: ...

    def texts_without_vectors(self, model: str, session_id: int | None = None, *,
                              limit: int | None = None, after_id: int = 0
                              ) -> list[PendingText]: ...

    def save_vectors(self, model: str, dimensions: int, rows: Iterable[VectorRow]) -> None: ...

    def cached_vectors(self, model: str, digests: Iterable[str]) -> dict[str, bytes]: ...

    def index_lease(self, session_id: int, model: str) -> IndexLease | None: ...

    def take_index_lease(self, session_id: int, model: str, holder: LeaseHolder,
                         seconds: float = ...) -> IndexLease | None: ...

    def release_index_lease(self, session_id: int, model: str,
                            holder: LeaseHolder) -> None: ...
