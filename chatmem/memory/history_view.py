"""A session's history as strategies read it: turns, each a user message and what followed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from chatmem.memory.context import Message


@dataclass(frozen=True)
class HistoryTurn:
    """A user message and what followed it up to the next user message."""

    number: int
    messages: tuple[Message, ...]

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.messages)


class HistoryView(Protocol):
    """Read access to a session's committed turns, oldest turn is number 1."""

    def turn_count(self) -> int: ...

    def newest_first(self) -> Iterator[HistoryTurn]:
        """Turns from the newest back; lazy so a strategy reads only what it uses."""
        ...

    def turns(self, first: int, last: int) -> list[HistoryTurn]:
        """Turns numbered first..last inclusive, in order."""
        ...


class ListHistory:
    """A HistoryView over turns held in memory (replays, tests)."""

    def __init__(self, turns: Sequence[HistoryTurn] = ()) -> None:
        self._turns = list(turns)

    @classmethod
    def from_messages(cls, messages: Iterable[Message]) -> ListHistory:
        return cls(group_turns(messages))

    def turn_count(self) -> int:
        return len(self._turns)

    def newest_first(self) -> Iterator[HistoryTurn]:
        return reversed(self._turns)

    def turns(self, first: int, last: int) -> list[HistoryTurn]:
        return self._turns[max(first, 1) - 1 : max(last, 0)]


def group_turns(messages: Iterable[Message], first_number: int = 1) -> list[HistoryTurn]:
    """Group messages into turns; anything before the first user message is turn 1."""
    turns: list[list[Message]] = []
    for message in messages:
        if message.role == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return [HistoryTurn(first_number + i, tuple(ms)) for i, ms in enumerate(turns)]
