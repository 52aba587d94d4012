"""Where `retrieval` gets what it ranks: a session's timeline, BM25 matches and vectors.

`StoredRecall` reads a history file and keeps what it read in the session's
state object, extended incrementally as turns are committed, so a build in a
long chat reads only what is new. `MemoryRecall` ranks a history held in
memory (no file): the same BM25 (an in-memory FTS5 index) and the same
embedder, so both rank alike.

Vectors are computed once per message, after the turn commits: `update`
starts embedding the new messages on a background thread (the next prompt
does not wait for it) and the next build collects them, embedding there and
then whatever is still missing, so a context never ranks on partial vectors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from chatmem.memory.base import HistoryTurn, Message
from chatmem.memory.ranking import Timeline
from chatmem.store import PendingText, VectorRow, rank_texts

if TYPE_CHECKING:
    import numpy as np

    from chatmem.embeddings import Embedder
    from chatmem.memory.state import SessionState
    from chatmem.tokens import TokenCounter

BATCH = 32
SEARCH_LIMIT = 400
"""BM25 matches read per build (best first): enough to rank, bounded at any history length."""


def sittings_of(times: Sequence[str | None], gap_hours: float, start: int = 0,
                last: datetime | None = None) -> tuple[list[int], datetime | None]:
    """Sitting number of each message: a new sitting starts after a gap of `gap_hours`.

    A message without a readable time starts a sitting of its own and ends the
    current one, so no prior is drawn from a guess.
    """
    numbers: list[int] = []
    current = start
    for text in times:
        when = _parse_time(text)
        if when is None or last is None or (when - last).total_seconds() > gap_hours * 3600:
            current += 1
        numbers.append(current)
        last = when
    return numbers, last


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None


def context_text(content: str, previous: str | None) -> str:
    """What a message's context vector embeds: the message before it, then it."""
    return f"{previous}\n{content}" if previous else content


def embed_pending(embedder: Embedder, pending: Sequence[PendingText]) -> list[VectorRow]:
    """Message and context vectors for `pending`, in batches, as float16 blobs."""
    import numpy as np

    rows: list[VectorRow] = []
    for start in range(0, len(pending), BATCH):
        chunk = pending[start : start + BATCH]
        own = embedder.embed([p.content for p in chunk])
        around = embedder.embed([context_text(p.content, p.previous) for p in chunk])
        rows.extend(
            VectorRow(p.message_id, np.asarray(v, dtype=np.float16).tobytes(),
                      np.asarray(c, dtype=np.float16).tobytes())
            for p, v, c in zip(chunk, own, around, strict=True)
        )
    return rows


class VectorJob:
    """Embeds messages on a background thread; `result()` waits for it."""

    def __init__(self, embedder: Embedder, pending: list[PendingText]) -> None:
        self.pending = pending
        self._rows: list[VectorRow] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(embedder,), daemon=True,
                                        name="chatmem-embed")
        self._thread.start()

    def _run(self, embedder: Embedder) -> None:
        try:
            self._rows = embed_pending(embedder, self.pending)
        except BaseException as e:  # reported when collected, on the caller's thread
            self._error = e

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self) -> list[VectorRow]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._rows


@dataclass
class _Cache:
    """What one session's recall has read so far (kept on its SessionState)."""

    gap_hours: float
    timeline: Timeline = field(default_factory=Timeline)
    last_id: int = 0
    last_sitting: int = 0
    last_time: datetime | None = None
    model: str | None = None
    vectors: Any = None  # np.ndarray (n × d) aligned with the timeline
    context: Any = None
    vector_last_id: int = 0
    checked_id: int = 0
    """Every message up to this id has a vector for `model` (or could not get one)."""
    job: VectorJob | None = None


class StoredRecall:
    """Recall over a session in a history file."""

    def __init__(self, state: SessionState, counter: TokenCounter, gap_hours: float,
                 embedder: Embedder | None) -> None:
        self.state, self.counter, self.embedder = state, counter, embedder
        caches: dict[float, _Cache] = state.caches.setdefault("recall", {})
        self.cache = caches.setdefault(gap_hours, _Cache(gap_hours))

    def timeline(self) -> Timeline:
        cache = self.cache
        rows = self.state.store.recall_rows(self.state.session_id, after_id=cache.last_id)
        if rows:
            numbers, cache.last_time = sittings_of([r.created_at for r in rows], cache.gap_hours,
                                                   cache.last_sitting, cache.last_time)
            for row, number in zip(rows, numbers, strict=True):
                cache.timeline.append(row.id, row.turn, row.role, number)
            cache.last_id, cache.last_sitting = rows[-1].id, numbers[-1]
        return cache.timeline

    def bm25(self, query: str, before_turn: int) -> dict[int, float]:
        return self.state.store.match_scores(self.state.session_id, query,
                                             before_turn=before_turn, limit=SEARCH_LIMIT)

    def messages(self, keys: Sequence[int]) -> dict[int, Message]:
        from chatmem.history import StoredHistory

        records = list(self.state.store.messages_by_id(keys).values())
        history = StoredHistory(self.state.store, self.state.session_id, self.counter)
        return {m.id: m for m in history.with_tokens(records) if m.id is not None}

    # -- vectors ---------------------------------------------------------------------

    def start_embedding(self) -> None:
        """Embed the session's messages that have no vector yet, in the background.

        A finished earlier job is stored first (a quick write); one still running is
        left alone, and what it does not cover waits for the next turn or build.
        """
        if self.embedder is None:
            return
        self._switch_model(self.embedder.key)
        job = self.cache.job
        if job is not None:
            if not job.done():
                return
            self.cache.job = None
            self._store(job.result(), job.pending)
        pending = self.state.store.texts_without_vectors(
            self.embedder.key, self.state.session_id, after_id=self.cache.checked_id)
        if pending:
            self.cache.job = VectorJob(self.embedder, pending)

    def _store(self, rows: list[VectorRow], pending: Sequence[PendingText]) -> None:
        assert self.embedder is not None
        self.state.store.save_vectors(self.embedder.key, self.embedder.dimensions, rows)
        if pending:
            self.cache.checked_id = max(self.cache.checked_id, pending[-1].message_id)

    def finish_embedding(self) -> None:
        """Store what the background job computed, then embed whatever is still missing."""
        assert self.embedder is not None
        store, key = self.state.store, self.embedder.key
        self._switch_model(key)
        job, self.cache.job = self.cache.job, None
        if job is not None:
            self._store(job.result(), job.pending)
        pending = store.texts_without_vectors(key, self.state.session_id,
                                              after_id=self.cache.checked_id)
        if pending:
            store.save_vectors(key, self.embedder.dimensions,
                               embed_pending(self.embedder, pending))
        # Only messages committed from now on need checking (they get higher ids).
        self.cache.checked_id = max(self.cache.checked_id, self.cache.last_id,
                                    pending[-1].message_id if pending else 0)

    def _switch_model(self, key: str) -> None:
        """Another model's vectors are another index: start over, never mix them."""
        import numpy as np

        assert self.embedder is not None
        if self.cache.model != key:
            self.cache.model, self.cache.vector_last_id, self.cache.checked_id = key, 0, 0
            self.cache.vectors = np.zeros((0, self.embedder.dimensions), np.float32)
            self.cache.context = self.cache.vectors

    def vectors(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Message and context vectors of the first `count` timeline messages."""
        import numpy as np

        assert self.embedder is not None
        timeline = self.timeline()
        self.finish_embedding()
        cache, key = self.cache, self.embedder.key
        if cache.vectors.shape[1] != self.embedder.dimensions:
            # An endpoint's dimensions are known after its first answer.
            cache.vectors = np.zeros((0, self.embedder.dimensions), np.float32)
            cache.context, cache.vector_last_id = cache.vectors, 0
        rows = self.state.store.vector_rows(self.state.session_id, key,
                                            after_id=cache.vector_last_id)
        size = len(timeline.keys)
        if rows or len(cache.vectors) < size:
            grown = np.zeros((size, self.embedder.dimensions), np.float32)
            grown_context = np.zeros_like(grown)
            grown[: len(cache.vectors)] = cache.vectors
            grown_context[: len(cache.context)] = cache.context
            for row in rows:
                at = timeline.index.get(row.message_id)
                if at is not None:
                    grown[at] = np.frombuffer(row.vector, dtype=np.float16)
                    grown_context[at] = np.frombuffer(row.context_vector, dtype=np.float16)
            cache.vectors, cache.context = grown, grown_context
            if rows:
                cache.vector_last_id = rows[-1].message_id
        return cache.vectors[:count], cache.context[:count]


class MemoryRecall:
    """Recall over turns held in memory: no file, no timestamps (no sitting prior)."""

    def __init__(self, turns: Sequence[HistoryTurn], embedder: Embedder | None) -> None:
        self.embedder = embedder
        self.by_key: dict[int, Message] = {}
        self._timeline = Timeline()
        for turn in turns:
            for message in turn.messages:
                key = len(self._timeline.keys)
                self.by_key[key] = message
                self._timeline.append(key, turn.number, message.role, key)

    def timeline(self) -> Timeline:
        return self._timeline

    def bm25(self, query: str, before_turn: int) -> dict[int, float]:
        count = self._timeline.before(before_turn)
        return rank_texts([self.by_key[k].content for k in self._timeline.keys[:count]], query)

    def messages(self, keys: Sequence[int]) -> dict[int, Message]:
        return {k: self.by_key[k] for k in keys}

    def start_embedding(self) -> None:
        pass

    def vectors(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        assert self.embedder is not None
        messages = [self.by_key[k] for k in self._timeline.keys[:count]]
        previous: list[str | None] = [None, *(m.content for m in messages[:-1])]
        own = self.embedder.embed([m.content for m in messages])
        around = self.embedder.embed([context_text(m.content, p)
                                      for m, p in zip(messages, previous, strict=True)])
        return own, around


Source = StoredRecall | MemoryRecall
QueryEmbedder = Callable[[str], Any]
