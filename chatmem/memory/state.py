"""Derived memory state of one session (summaries, facts, prune boundaries), in the store.

Strategies read it while building a context and write it only in `update`,
after a turn has committed.
"""

from __future__ import annotations

from typing import Any

from chatmem.store import Store


class SessionState:
    def __init__(self, store: Store, session_id: int, user: str | None = None) -> None:
        self.store = store
        self.session_id = session_id
        self.user = user

    def get(self, strategy: str) -> dict[str, Any]:
        return self.store.strategy_state(self.session_id, strategy)

    def set(self, strategy: str, **values: Any) -> None:
        self.store.set_strategy_state(self.session_id, strategy, values)
