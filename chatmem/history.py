"""A session's committed turns as the memory core sees them, read lazily.

Turns are read newest first in pages through the (session, turn) index, so
`window` and `tokens` touch only the tail of a long session. Token counts come
from the store (a turn's commit writes them) or are computed in memory
(`MessageCounts`): reading history never writes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from datetime import datetime, tzinfo

from chatmem.errors import WrongThread
from chatmem.memory.context import Message
from chatmem.memory.history_view import HistoryTurn
from chatmem.memory.message_counts import MessageCounts
from chatmem.store.protocols import MemoryStore
from chatmem.timestamps import local_moment
from chatmem.tokens import TokenCounter

PAGE_TURNS = 16


class StoredHistory:
    def __init__(self, store: MemoryStore, session_id: int, counter: TokenCounter,
                 upto: int | None = None, *, counts: MessageCounts | None = None,
                 turns: int | None = None) -> None:
        """`upto`: see only the first `upto` turns (the history as it was at a turn);
        `counts`: what this process has counted already (a session's engine keeps one);
        `turns`: the history's turn count when the caller knows it (a turn it has just
        committed), not read again."""
        self.store = store
        self.session_id = session_id
        self.counter = counter
        self.counts = counts or MessageCounts(store, counter)
        self._count = store.history.turn_count(session_id) if turns is None else turns
        if upto is not None:
            self._count = min(self._count, upto)
        self._thread = threading.get_ident()
        """The store's thread (the count was read, or a commit made, on it): the only one
        to read this history (`_on_its_thread`)."""

    def _on_its_thread(self) -> None:
        """WrongThread on another thread: what is known already (the turn count, an empty
        history's turns) answered a plugin's thread where the store refuses it, so README's
        "not from a thread of your own (one error line)" held only for some reads."""
        if threading.get_ident() != self._thread:
            raise WrongThread(getattr(self.store, "location", "the history"))

    def turn_count(self) -> int:
        self._on_its_thread()
        return self._count

    def newest_first(self, wanted: int | None = None) -> Iterator[HistoryTurn]:
        self._on_its_thread()
        last = self._count
        # `recent=1` or `k=5` need one or five turns: a first page of PAGE_TURNS would read
        # and count three to sixteen times the messages they send.
        page = max(wanted, 1) if wanted is not None else PAGE_TURNS
        while last >= 1:
            first = max(1, last - page + 1)
            yield from reversed(self.turns(first, last))
            last = first - 1
            page *= 2

    def turns(self, first: int, last: int) -> list[HistoryTurn]:
        self._on_its_thread()
        first, last = max(first, 1), min(last, self._count)
        if first > last:
            return []
        messages = self.counts.counted(self.store.history.counted_messages(
            self.session_id, first, last, self.counts.counter.key))
        turns: dict[int, list[Message]] = {}
        for message in messages:
            turns.setdefault(message.turn or 0, []).append(message)
        return [HistoryTurn(n, tuple(ms)) for n, ms in sorted(turns.items())]

    def said_at(self, messages: Iterable[Message], zone: tzinfo) -> dict[int, datetime]:
        self._on_its_thread()
        ids = [m.id for m in messages if m.id is not None]
        times = self.store.history.created_times(self.session_id, ids)
        return {i: moment for i, text in times.items()
                if (moment := local_moment(text, zone)) is not None}
