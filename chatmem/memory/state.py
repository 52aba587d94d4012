"""Derived memory state of one session (summaries, facts, prune boundaries), in the store.

Strategies read it while building a context and write it only in `update`,
after a turn has committed.
"""

from __future__ import annotations

from typing import Any

from chatmem.memory.fact_keys import key_identity
from chatmem.memory.message_counts import MessageCounts
from chatmem.store import FactRecord, FactScope
from chatmem.store.protocols import MemoryStore
from chatmem.tokens import TokenCounter


class SessionState:
    def __init__(self, store: MemoryStore, session_id: int, user: str | None = None) -> None:
        self.store = store
        self.session_id = session_id
        self.user = user
        self.caches: dict[str, Any] = {}
        """What strategies read once and extend as turns commit (recall's timeline, vectors)."""

    def message_counts(self, counter: TokenCounter) -> MessageCounts:
        """Token counts of this session's messages under `counter`, kept for the process."""
        counts: MessageCounts = self.caches.setdefault(f"message_counts:{counter.key}",
                                                       MessageCounts(self.store, counter))
        return counts

    def get(self, strategy: str) -> dict[str, Any]:
        return self.store.memory.strategy_state(self.session_id, strategy)

    def set(self, strategy: str, **values: Any) -> None:
        self.store.memory.set_strategy_state(self.session_id, strategy, values)

    # -- facts (entity) -------------------------------------------------------------

    def live_facts(self) -> list[FactRecord]:
        """Facts this session may use: its own, and its user's profile facts but those of a
        key the session has its own value for (remembered for this conversation only). One
        key stored in two forms before keys were normalized (café composed and not) is one
        fact: the newer value, as the store keeps it once either is written again."""
        facts = self.store.facts.facts(user=self.user, session_id=self.session_id)
        own = {key_identity(f.key) for f in facts if f.scope == FactScope.SESSION}
        newest: dict[tuple[FactScope, str], FactRecord] = {}
        for fact in sorted(facts, key=lambda f: (f.updated_at, f.id)):
            newest[fact.scope, key_identity(fact.key)] = fact
        return [f for f in facts if newest[f.scope, key_identity(f.key)] is f
                and (f.scope == FactScope.SESSION or key_identity(f.key) not in own)]

    def fact_origins(self, facts: list[FactRecord]) -> dict[int, str]:
        """Fact id → the other session it was stated in (user facts travel)."""
        names = self.store.sessions.session_addresses(
            {f.source_session_id for f in facts if f.source_session_id is not None})
        return {f.id: names[f.source_session_id] for f in facts
                if f.source_session_id is not None and f.source_session_id != self.session_id
                and f.source_session_id in names}
