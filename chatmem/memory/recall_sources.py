"""Where `retrieval` gets what it ranks: BM25 matches, sittings, messages and vectors.

`StoredRecall` reads a history file, each read bounded by what the ranking
needs: the best matches of a search that scores a bounded number of index
entries, the sitting starts (through an index, then only what is new), the
candidates it keeps by position. Vectors, the one thing a dense ranking needs
for every message, are loaded once per process into arrays kept on the
session's state and extended as messages are committed.

Vectors are computed once per message, after the turn commits: `update`
starts embedding the new messages on a background thread (the next prompt
does not wait for it) and the next build collects them, embedding there and
then whatever is still missing, so a context never ranks on partial vectors.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chatmem.memory.context import Message
from chatmem.memory.ranking import Sittings
from chatmem.store import PendingText, VectorRow

if TYPE_CHECKING:
    import numpy as np

    from chatmem.embeddings import Embedder
    from chatmem.memory.state import SessionState
    from chatmem.tokens import TokenCounter

BATCH = 32
SEARCH_LIMIT = 400
"""BM25 matches read per build (best first): enough to rank, bounded at any history length."""


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


GROWTH = 1.5
"""Vector arrays grow by this factor, so extending them costs O(1) per message amortized."""


@dataclass
class _Cache:
    """What one session's recall has read so far (kept on its SessionState)."""

    gap_hours: float
    starts: list[int] = field(default_factory=list)
    """Positions where a sitting starts, up to `checked`."""
    checked: int = 0
    """The last position whose sitting start is known."""
    model: str | None = None
    vectors: Any = None  # np.ndarray, row = position − 1, with room to grow
    context: Any = None
    filled: int = 0
    """Rows of `vectors` that hold the session's messages (the rest is room)."""
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

    def count_before(self, turn: int) -> int:
        return self.state.store.count_before(self.state.session_id, turn)

    def sittings(self) -> Sittings:
        """Where the session's sittings start: read once, then only what was added."""
        cache = self.cache
        starts, cache.checked = self.state.store.sitting_starts(
            self.state.session_id, cache.gap_hours * 3600, after=cache.checked)
        cache.starts.extend(starts)
        return Sittings(cache.starts)

    def bm25(self, query: str, before_turn: int) -> dict[int, float]:
        return self.state.store.match_scores(self.state.session_id, query,
                                             before_turn=before_turn, limit=SEARCH_LIMIT)

    def messages_at(self, positions: Sequence[int]) -> dict[int, Message]:
        records = self.state.store.messages_at(self.state.session_id, positions)
        counted = self.state.message_counts(self.counter).messages(list(records.values()))
        return {r.position: m for r, m in zip(records.values(), counted, strict=True)}

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
        # Read first: a message committed from now on gets a higher id, and is checked later.
        last = store.last_message_id(self.state.session_id)
        pending = store.texts_without_vectors(key, self.state.session_id,
                                              after_id=self.cache.checked_id)
        if pending:
            store.save_vectors(key, self.embedder.dimensions,
                               embed_pending(self.embedder, pending))
        self.cache.checked_id = max(self.cache.checked_id, last,
                                    pending[-1].message_id if pending else 0)

    def _switch_model(self, key: str) -> None:
        """Another model's vectors are another index: start over, never mix them."""
        assert self.embedder is not None
        if self.cache.model != key:
            self.cache.model, self.cache.vector_last_id, self.cache.checked_id = key, 0, 0
            self._reset_vectors()

    def _reset_vectors(self) -> None:
        import numpy as np

        assert self.embedder is not None
        self.cache.vectors = np.zeros((0, self.embedder.dimensions), np.float32)
        self.cache.context, self.cache.filled = self.cache.vectors, 0

    def vectors(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Message and context vectors of the first `count` messages (row = position − 1)."""
        import numpy as np

        assert self.embedder is not None
        self.finish_embedding()
        cache, key = self.cache, self.embedder.key
        if cache.vectors.shape[1] != self.embedder.dimensions:
            # An endpoint's dimensions are known after its first answer.
            self._reset_vectors()
            cache.vector_last_id = 0
        rows = self.state.store.vector_rows(self.state.session_id, key,
                                            after_id=cache.vector_last_id)
        size = max([count, cache.filled, *(r.position for r in rows)])
        if size > len(cache.vectors):
            room = max(size, int(len(cache.vectors) * GROWTH))
            for name in ("vectors", "context"):
                grown = np.zeros((room, self.embedder.dimensions), np.float32)
                grown[: cache.filled] = getattr(cache, name)[: cache.filled]
                setattr(cache, name, grown)
        for row in rows:
            cache.vectors[row.position - 1] = np.frombuffer(row.vector, dtype=np.float16)
            cache.context[row.position - 1] = np.frombuffer(row.context_vector,
                                                            dtype=np.float16)
        cache.filled = size
        if rows:
            cache.vector_last_id = rows[-1].message_id
        return cache.vectors[:count], cache.context[:count]
