"""A session's committed turns as the memory core sees them, read lazily.

Turns are read newest first in pages through the (session, turn) index, and
each message's token count is computed once per tokenizer and cached in the
store, so `window` and `tokens` touch only the tail of a long session.
"""

from __future__ import annotations

from collections.abc import Iterator

from chatmem.memory import quoting
from chatmem.memory.context import Message
from chatmem.memory.history_view import HistoryTurn
from chatmem.store import MessageRecord, Store
from chatmem.tokens import TokenCounter

PAGE_TURNS = 16


class StoredHistory:
    def __init__(self, store: Store, session_id: int, counter: TokenCounter,
                 upto: int | None = None) -> None:
        """`upto`: see only the first `upto` turns (the history as it was at a turn)."""
        self.store = store
        self.session_id = session_id
        self.counter = counter
        self._count = store.turn_count(session_id)
        if upto is not None:
            self._count = min(self._count, upto)

    def turn_count(self) -> int:
        return self._count

    def newest_first(self) -> Iterator[HistoryTurn]:
        last = self._count
        page = PAGE_TURNS
        while last >= 1:
            first = max(1, last - page + 1)
            yield from reversed(self.turns(first, last))
            last = first - 1
            page *= 2

    def turns(self, first: int, last: int) -> list[HistoryTurn]:
        first, last = max(first, 1), min(last, self._count)
        if first > last:
            return []
        records = self.store.messages(self.session_id, first, last)
        messages = self.with_tokens(records)
        turns: dict[int, list[Message]] = {}
        for message in messages:
            turns.setdefault(message.turn or 0, []).append(message)
        return [HistoryTurn(n, tuple(ms)) for n, ms in sorted(turns.items())]

    def with_tokens(self, records: list[MessageRecord]) -> list[Message]:
        """Messages with their token counts, computing and caching the missing ones."""
        cached = self.store.cached_token_counts((r.id for r in records), self.counter.key)
        missing = {
            r.id: self.counter.count_message(r.role, as_sent(r))
            for r in records
            if r.id not in cached
        }
        if missing:
            self.store.save_token_counts(missing, self.counter.key)
            cached.update(missing)
        return [Message(r.role, as_sent(r), cached[r.id], r.id, r.turn) for r in records]


def as_sent(record: MessageRecord) -> str:
    """A message's content as the model gets it: a stored system message only as a quotation.

    Only transcripts put system messages into history (the session's own system
    prompt is not a message); an imported one must not instruct the model.
    """
    return quoting.imported_system_block(record.content) if record.role == "system" \
        else record.content

