"""What history, memory, the engine and evaluation need of the store, by repository.

Each repository Protocol is what one of the Store's repositories is to its callers
(`FactRepository` is `store.facts`), listing only the methods they use, so a module
says how little of the store it touches. `MemoryStore` is what a strategy reaches
through its session state, `TurnStore` what an engine needs to run a turn and
`PrivacyStore` (chatmem.store.privacy_protocols) what retention, a purge and the export
archive read and erase: each is the few repositories it uses. `Store` implements every
one (`mypy chatmem` checks it in chatmem/store/__init__.py, tests/store/test_protocols.py
at run time).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from chatmem.images import ImageData
from chatmem.store.images import StoredImage
from chatmem.store.leases import IndexLease, LeaseHolder
from chatmem.store.recall import CandidateRow, WordMatches
from chatmem.store.records import (
    FactHistoryRecord,
    FactRecord,
    FactScope,
    MessageRecord,
    SessionAccess,
    SessionRecord,
    SessionSummary,
    StateRow,
    SummaryRecord,
    TurnRecord,
)
from chatmem.store.retention import ExpiredFact, SessionEntry
from chatmem.store.vectors import PendingText, PositionedVector, VectorBatch, VectorRow


class HistoryRepository(Protocol):
    """A session's messages and their cached token counts (`store.history`)."""

    def messages(self, session_id: int, first_turn: int = 1,
                 last_turn: int | None = None) -> list[MessageRecord]: ...

    def counted_messages(self, session_id: int, first_turn: int, last_turn: int,
                         tokenizer: str) -> list[tuple[MessageRecord, int | None]]: ...

    def turn_count(self, session_id: int) -> int: ...

    def messages_of(self, session_ids: Iterable[int],
                    last_turn: int) -> dict[int, list[MessageRecord]]: ...

    def last_turns_of(self, session_ids: Iterable[int],
                      turns: int) -> dict[int, list[MessageRecord]]: ...

    def messages_in_turns(self, session_id: int, turns: Iterable[int]) -> list[MessageRecord]: ...

    def message_count(self, session_id: int, *, at_most: int) -> int: ...

    def import_messages(self, session_id: int,
                        messages: Iterable[Mapping[str, Any]]) -> list[int]: ...

    def contents(self, session_id: int, message_ids: Iterable[int]) -> dict[int, str]: ...

    def placed(self, session_id: int, message_ids: Iterable[int]
               ) -> dict[int, tuple[int, str, str]]: ...

    def external_ids(self, session_id: int, message_ids: Iterable[int]) -> dict[int, str]: ...

    def asked(self, session_id: int, message_ids: Iterable[int]) -> set[int]: ...

    def speakers(self, session_id: int, message_ids: Iterable[int]) -> dict[int, str]: ...

    def created_times(self, session_id: int, message_ids: Iterable[int]) -> dict[int, str]: ...


class MemoryStateRepository(Protocol):
    """A strategy's own state and summaries (`store.memory`)."""

    def strategy_state(self, session_id: int, strategy: str) -> dict[str, Any]: ...

    def own_state_value(self, session_id: int, strategy: str, key: str
                        ) -> tuple[bool, Any]: ...
    def state_distrusted(self, session_id: int, strategy: str) -> bool: ...

    def counted_elsewhere(self, session_id: int, owner: str, key: str) -> int: ...

    def owners_state_value(self, session_id: int, strategy: str, key: str) -> Any: ...

    def summarized_without_state(self, session_id: int | None = None
                                 ) -> list[tuple[int, str]]: ...

    def set_strategy_state(self, session_id: int, strategy: str, values: Mapping[str, Any],
                           *, covers_turn: int | None = None,
                           unless_erased_since: int | None = None) -> bool: ...

    def strategy_state_size(self, session_id: int, strategy: str) -> int: ...

    def strategy_state_values(self, key: str, session_id: int | None = None) -> list[StateRow]: ...

    def state_row(self, session_id: int, strategy: str, key: str) -> StateRow: ...

    def reset_strategy_state(self, session_id: int, strategy: str) -> tuple[int, int]: ...

    def trusted(self, alias: str, strategy: str) -> str: ...

    def summaries(self, session_id: int, strategy: str | None = None) -> list[SummaryRecord]: ...

    def latest_summary(self, session_id: int, strategy: str) -> SummaryRecord | None: ...

    def add_summary(self, session_id: int, strategy: str, text: str, *,
                    covered_ids: list[int], anchors: list[str] | None = None,
                    dropped_anchors: list[str] | None = None,
                    model: str | None = None) -> SummaryRecord: ...


class FactRepository(Protocol):
    """Facts, their provenance and the turns that showed them (`store.facts`)."""

    def facts(self, *, user: str | None = None, session_id: int | None = None,
              include_deleted: bool = False) -> list[FactRecord]: ...

    def upsert_fact(self, key: str, value: str, *, scope: FactScope, user: str | None = None,
                    session_id: int | None = None, source_message_id: int | None = None,
                    source_turn: int | None = None, source_session_id: int | None = None,
                    speaker: str | None = None) -> FactRecord: ...

    def keep_speaker(self, fact_id: int, speaker: str) -> None: ...

    def fact(self, fact_id: int) -> FactRecord: ...

    def forget_fact(self, fact_id: int, *, purge: bool = False) -> None: ...

    def fact_history(self, fact_ids: list[int]) -> dict[int, list[FactHistoryRecord]]: ...

    def turn_contexts_with(self, kind: str) -> list[tuple[int, dict[str, Any], str | None]]: ...

    def rewrite_turn_context(self, turn_id: int, context: Mapping[str, Any],
                             rendered_prompt: str | None) -> None: ...


class VectorRepository(Protocol):
    """Message vectors per embedding model, and the messages still without them
    (`store.vectors`)."""

    def last_message_id(self, session_id: int) -> int: ...

    def count_without_vectors(self, model: str, session_id: int | None = None, *,
                              dimensions: int = 0, after_id: int = 0) -> int: ...

    def texts_without_vectors(self, model: str, session_id: int | None = None, *,
                              limit: int | None = None, after_id: int = 0,
                              dimensions: int = 0) -> list[PendingText]: ...

    def pending_and_last(self, model: str, session_id: int, *, limit: int,
                         after_id: int = 0, dimensions: int = 0
                         ) -> tuple[list[PendingText], int]: ...

    def sessions_without_vectors(self, model: str, dimensions: int = 0) -> list[int]: ...

    def stale_vectors(self, model: str, dimensions: int,
                      session_id: int | None = None) -> dict[int, int]: ...

    def save_vectors(self, model: str, dimensions: int, rows: Iterable[VectorRow]) -> None: ...

    def cached_vectors(self, model: str, digests: Iterable[str],
                       dimensions: int = 0) -> dict[str, bytes]: ...

    @property
    def ranks_vectors(self) -> bool: ...

    def vector_counts(self, session_id: int, model: str,
                      last_position: int) -> dict[int, int]: ...

    def vectors_at(self, session_id: int, model: str,
                   positions: Iterable[int]) -> list[PositionedVector]: ...

    def vector_rows(self, session_id: int, model: str, *,
                    after_id: int = 0) -> list[PositionedVector]: ...

    @property
    def shared_identity(self) -> tuple[int, int] | None: ...

    def vector_batch(self, session_id: int, model: str, *, after_id: int = 0,
                     dimensions: int = 0) -> VectorBatch: ...

    def nearest_positions(self, session_id: int, model: str, dimensions: int,
                          last_position: int, query: Sequence[float],
                          limit: int) -> list[int] | None: ...


class LeaseRepository(Protocol):
    """Who is embedding a session's backlog (`store.leases`)."""

    def index_lease(self, session_id: int, model: str) -> IndexLease | None: ...

    def take_index_lease(self, session_id: int, model: str, holder: LeaseHolder,
                         seconds: float = ...) -> IndexLease | None: ...

    def release_index_lease(self, session_id: int, model: str,
                            holder: LeaseHolder) -> None: ...


class RecallRepository(Protocol):
    """What recall ranks: positions, sittings and word matches (`store.recall`)."""

    def count_before(self, session_id: int, turn: int) -> int: ...

    def last_position(self, session_id: int) -> int: ...

    def newest_message(self, session_id: int) -> MessageRecord | None: ...

    def sitting_starts(self, session_id: int, gap_seconds: float, *,
                       after: int = 0) -> tuple[list[int], int]: ...

    def word_matches(self, session_id: int, query: str, *, before_turn: int,
                     limit: int) -> WordMatches: ...

    def rare_word_matches(self, session_id: int, text: str, *, before_turn: int, most: int,
                          limit: int, alone: bool = False) -> WordMatches: ...

    def messages_at(self, session_id: int,
                    positions: Iterable[int]) -> dict[int, MessageRecord]: ...

    def candidate_rows(self, session_id: int, positions: Iterable[int],
                       tokenizer: str) -> list[CandidateRow]: ...

    def index_untrusted_words(self, session_id: int, after_id: int = 0) -> int: ...


class SessionRepository(Protocol):
    """Sessions by name, their settings and names (`store.sessions`)."""

    def find_session(self, name: str) -> SessionRecord | None: ...

    def numbered(self, stem: str, *, at_most: int) -> dict[str, tuple[int, int]]: ...

    def session(self, name: str) -> SessionRecord: ...

    def session_by_id(self, session_id: int) -> SessionRecord: ...

    def erasures(self, session_id: int) -> int | None: ...

    def check_kept(self, session_id: int, consequence: str = ...) -> None: ...

    def erased_since(self, session_id: int, seen: int | None) -> bool: ...

    def session_names(self, session_ids: Iterable[int]) -> dict[int, str]: ...

    def session_addresses(self, session_ids: Iterable[int]) -> dict[int, str]: ...

    def list_sessions(self) -> list[SessionSummary]: ...

    def find_or_create_session(self, name: str, strategy: str,
                               params: Mapping[str, Any] | None = None,
                               **fields: str | None) -> tuple[SessionRecord, bool]: ...

    def create_session(self, name: str, strategy: str, params: Mapping[str, Any] | None = None,
                       *, provider: str | None = None, model: str | None = None,
                       system: str | None = None, user: str | None = None,
                       tokenizer: str | None = None,
                       unfinished: bool = False) -> SessionRecord: ...

    def update_session(self, session_id: int, **fields: Any) -> SessionRecord: ...

    def set_times(self, session_id: int, created_at: str, updated_at: str) -> None: ...

    def check_session_writable(self, session_id: int, *,
                               owners_only: str | None = None) -> None: ...

    def session_access(self, session_id: int) -> SessionAccess: ...

    def check_session_owned(self, session_id: int, what: str) -> None: ...

    def copy_shares(self, from_id: int, to_id: int) -> int: ...

    def discard_empty_session(self, session_id: int, *,
                              as_seen: SessionRecord | None = None) -> bool: ...

    def delete_session(self, name: str) -> None: ...

    def add_probes(self, session_id: int, probes: Iterable[Mapping[str, Any]]) -> int: ...


class TurnRepository(Protocol):
    """A turn's row, from recorded to committed, or hidden by the turn that replaces it
    (`store.turns`)."""

    def record_turn(self, turn: TurnRecord, *, erasures: int | None = None) -> TurnRecord: ...

    def commit_turn(self, turn: TurnRecord, *, sent_at: str | None = None,
                    replied_at: str | None = None,
                    message_tokens: tuple[int, int] | None = None,
                    supersedes: int | None = None,
                    erasures: int | None = None,
                    external_ids: tuple[str | None, str | None] = (None, None),
                    after_turn: int | None = None) -> TurnRecord: ...

    def hide_turn(self, session_id: int, expected: int | None = None) -> TurnRecord: ...

    def replaceable_turn(self, session_id: int, expected: int | None = None) -> TurnRecord: ...

    def ran_on(self, session_id: int, provider: str, model: str) -> bool: ...

    def last_completed_id(self, session_id: int) -> int | None: ...

    def show_turn(self, turn: TurnRecord) -> None: ...


class ImageRepository(Protocol):
    """Images sent with a session's messages (`store.images`)."""

    def keep_images(self, session_id: int, images: Sequence[ImageData]) -> None: ...

    def images(self, session_id: int) -> list[StoredImage]: ...

    def image_bytes(self, session_id: int, digest: str) -> bytes | None: ...


class RetentionRepository(Protocol):
    """What retention and a user's erasure find and erase, and the facts a context used
    (`store.retention`)."""

    def idle_sessions(self, now: datetime, default_days: float | None) -> list[SessionEntry]: ...

    def expired_facts(self, now: datetime, idle_days: float | None) -> list[ExpiredFact]: ...

    def user_sessions(self, user: str) -> list[SessionEntry]: ...

    def erase_sessions(self, session_ids: Iterable[int]) -> None: ...

    def erase_facts(self, fact_ids: Iterable[int]) -> None: ...

    def mark_facts_used(self, fact_ids: Iterable[int]) -> None: ...


class SessionStore(Protocol):
    """A session's messages, its strategies' state and its facts, written in transactions."""

    def write(self) -> AbstractContextManager[None]: ...

    @property
    def history(self) -> HistoryRepository: ...

    @property
    def sessions(self) -> SessionRepository: ...

    @property
    def memory(self) -> MemoryStateRepository: ...

    @property
    def facts(self) -> FactRepository: ...


class MemoryStore(SessionStore, Protocol):
    """Everything a strategy reaches through its session's state."""

    @property
    def recall(self) -> RecallRepository: ...

    @property
    def vectors(self) -> VectorRepository: ...

    @property
    def leases(self) -> LeaseRepository: ...


class TurnStore(MemoryStore, Protocol):
    """What an engine needs to open a session and run its turns."""

    def now(self) -> str: ...

    def check_writable(self, *, patient: bool = False) -> None: ...

    def tidy(self, *, fold_log: bool) -> None: ...

    @property
    def turns(self) -> TurnRepository: ...

    @property
    def retention(self) -> RetentionRepository: ...

    @property
    def images(self) -> ImageRepository: ...
