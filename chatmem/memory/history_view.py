"""A session's history as strategies read it: turns, each a user message and what followed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, tzinfo
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

    def newest_first(self, wanted: int | None = None) -> Iterator[HistoryTurn]:
        """Turns from the newest back; lazy so a strategy reads only what it uses.
        `wanted`: how many the caller means to take at most, so a first read can hold
        just those (more are still given, read on demand)."""
        ...

    def turns(self, first: int, last: int) -> list[HistoryTurn]:
        """Turns numbered first..last inclusive, in order."""
        ...

    def said_at(self, messages: Iterable[Message], zone: tzinfo) -> dict[int, datetime]:
        """When the stored `messages` were said, in `zone` (`request.zone`), by message id;
        a message whose time does not read (imported undated) is left out. A date given
        without a time of day (an import's `2026-03-07`) is noon of that date in `zone`."""
        ...
