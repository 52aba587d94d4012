"""A HistoryView over turns held in memory, for strategy tests that need no history file."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, tzinfo

from chatmem.memory.context import Message
from chatmem.memory.history_view import HistoryTurn
from chatmem.memory.state import SessionState
from chatmem.store import Store


class ListHistory:
    """A HistoryView over turns held in memory (replays, tests)."""

    def __init__(self, turns: Sequence[HistoryTurn] = ()) -> None:
        self._turns = list(turns)

    @classmethod
    def from_messages(cls, messages: Iterable[Message]) -> ListHistory:
        return cls(group_turns(messages))

    def turn_count(self) -> int:
        return len(self._turns)

    def newest_first(self, wanted: int | None = None) -> Iterator[HistoryTurn]:
        return reversed(self._turns)

    def turns(self, first: int, last: int) -> list[HistoryTurn]:
        return self._turns[max(first, 1) - 1 : max(last, 0)]

    def said_at(self, messages: Iterable[Message], zone: tzinfo) -> dict[int, datetime]:
        return {}  # messages held in memory were said at no stored time


def group_turns(messages: Iterable[Message], first_number: int = 1) -> list[HistoryTurn]:
    """Group messages into turns; anything before the first user message is turn 1."""
    turns: list[list[Message]] = []
    for message in messages:
        if message.role == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return [HistoryTurn(first_number + i, tuple(ms)) for i, ms in enumerate(turns)]


def scratch_state() -> SessionState:
    """The state of an empty session in a history file held in memory: no summaries, facts
    or pins, for a build over a ListHistory."""
    store = Store(":memory:")
    return SessionState(store, store.sessions.create_session("scratch", "buffer").id)
