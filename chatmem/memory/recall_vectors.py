"""The vectors a dense ranking reads: a session's, held per process in arrays kept on its
state (per model) and extended as they are stored, or (where the database ranks vectors)
only those of some candidates and their neighbours."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chatmem.memory.ranking import distinct, meaning, scaled, similarities

if TYPE_CHECKING:
    import numpy as np

    from chatmem.embeddings import Embedder
    from chatmem.memory.state import SessionState

GROWTH = 1.5
"""Vector arrays grow by this factor, so extending them costs O(1) per message amortized."""


@dataclass(eq=False)
class _VectorCache:
    """One model's vectors of one session, as read so far: a state's own (kept on its
    SessionState), or shared by the states of this process that name the same stored
    memory (SessionState.shared; `_SHARED`)."""

    vectors: Any = None  # np.ndarray, row = position − 1, with room to grow
    links: Any = None  # np.ndarray: each row's dot product with the row before (ranking.links)
    present: Any = None  # np.ndarray of bool: the row holds a stored vector
    filled: int = 0
    """Rows that hold the session's messages (the rest is room); rows below it may have been
    handed out (`Vectors` are views of these arrays)."""
    last_id: int = 0
    """Vectors of messages up to this id are loaded (the backlog stores them in id order)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while it is read and extended: the engines sharing it run on threads of their
    own (a server's kept conversations)."""
    holders: weakref.WeakSet[_Holder] = field(default_factory=weakref.WeakSet)
    """The states holding it now (a state's caches emptied lets its holder go)."""


class _Holder:
    """A state's hold on a cache (in SessionState.caches): while more than one state holds
    a cache, rows already handed out are never written in place (copy on write)."""

    __slots__ = ("__weakref__", "cache")

    def __init__(self, cache: _VectorCache) -> None:
        self.cache = cache
        cache.holders.add(self)


_SHARED: weakref.WeakValueDictionary[Hashable, _VectorCache] = weakref.WeakValueDictionary()
"""The caches states share, by what names the stored memory (SessionState.shared), the
embedder and the width: one copy of a session's vectors in a process however many engines
read them (a server's engines of one conversation: recording, reading, searching; 30 MB
each at 10,000 turns). Kept while a state holds one."""
_SHARING = threading.Lock()


def _cache_of(state: SessionState, model: str, width: int) -> _VectorCache:
    """The cache `state` reads `model`'s vectors of `width` from: the one it holds, else
    the one the states naming the same stored memory share, else a new one."""
    holders: dict[tuple[str, int], _Holder] = state.caches.setdefault("vectors", {})
    held = holders.get((model, width))
    if held is None:
        if state.shared is None:
            held = _Holder(_VectorCache())
        else:
            key = (state.shared, model, width)
            with _SHARING:
                cache = _SHARED.get(key)
                if cache is None:
                    cache = _SHARED[key] = _VectorCache()
                held = _Holder(cache)
        holders[(model, width)] = held
    return held.cache


@dataclass(frozen=True)
class Vectors:
    """The vectors of the first `count` messages, as far as they are embedded."""

    own: np.ndarray
    links: np.ndarray
    """ranking.links(own)."""
    present: np.ndarray | None
    """Which rows hold a vector (None: all of them)."""
    count: int
    """How many rows hold one."""


@dataclass(frozen=True)
class Dense:
    """Meaning scores of the first `count` messages (index = position − 1)."""

    scores: np.ndarray | None
    """dense_scores over the messages ranked; None: rank by words (nothing embedded in
    this model, or by another version of it)."""
    present: np.ndarray | None
    """Which messages were ranked (None: all of them)."""
    embedded: int
    """How many of the messages have a vector."""
    rows: Callable[[Sequence[int]], np.ndarray] | None = None
    """The own vectors of some positions (for MMR)."""
    asked: np.ndarray | None = None
    """The input's vector (None: not asked)."""
    again: Callable[[np.ndarray], np.ndarray] | None = None
    """`scores` for another input vector, over the same messages (None: where the database
    ranks vectors, whose candidates were picked for this one)."""


def rows_of(vectors: np.ndarray) -> Callable[[Sequence[int]], np.ndarray]:
    """The own vectors of some positions, read from `vectors` (row = position − 1)."""
    return lambda positions: vectors[[p - 1 for p in positions]]


def held_vectors(state: SessionState, embedder: Embedder, count: int, width: int = 0) -> Vectors:
    """The stored vectors of `width` dimensions (default: the embedder's) of the first
    `count` messages (row = position − 1); a message not embedded yet (or in another
    size, by an earlier version of the embedder) has a zero row, marked absent. Reads
    only what was stored since the last call. Shared with the states naming the same
    stored memory (SessionState.shared): one copy of it in a process."""
    width = width or embedder.dimensions
    cache = _cache_of(state, embedder.key, width)
    with cache.lock:
        return _read_into(cache, state, embedder, count, width)


def _read_into(cache: _VectorCache, state: SessionState, embedder: Embedder, count: int,
               width: int) -> Vectors:
    """held_vectors, on `cache`, its lock held."""
    import numpy as np

    batch = state.store.vectors.vector_batch(state.session_id, embedder.key,
                                                  after_id=cache.last_id, dimensions=width)
    if cache.vectors is None:
        cache.vectors = np.zeros((0, width), np.float32)
        cache.links = np.zeros(0, np.float32)
        cache.present = np.zeros(0, dtype=bool)
        if not batch.positions:
            cache.vectors = None
            return Vectors(np.zeros((count, 0), np.float32), np.zeros(count, np.float32),
                           np.zeros(count, bool), 0)
    width = cache.vectors.shape[1]
    size = max(count, cache.filled, max(batch.positions, default=0))
    if batch.positions and min(batch.positions) <= cache.filled \
            and size <= len(cache.vectors) and len(cache.holders) > 1:
        # Rows already handed out get a vector (embedded after they were counted; another
        # writer's): another state may be ranking by them on its own thread. Written into
        # a copy, theirs stay as they were handed (copy on write).
        for name in ("vectors", "links", "present"):
            setattr(cache, name, getattr(cache, name).copy())
    if size > len(cache.vectors):
        # Room beyond `size` from the first read on: otherwise the next turn's vectors
        # copy the whole array (3 ms at 20,000 messages). Unwritten zeros take no memory.
        room = int(size * GROWTH)
        grown = np.zeros((room, width), np.float32)
        grown[: cache.filled] = cache.vectors[: cache.filled]
        cache.vectors = grown
        for name, kind in (("links", np.float32), ("present", bool)):
            longer = np.zeros(room, dtype=kind)
            longer[: cache.filled] = getattr(cache, name)[: cache.filled]
            setattr(cache, name, longer)
    if batch.positions:
        # One assignment for the whole batch: a session opening reads 20,000 of them.
        rows = np.asarray(batch.positions) - 1
        cache.vectors[rows] = np.frombuffer(batch.vectors, np.float16).reshape(-1, width)
        cache.present[rows] = True
        # A new vector changes its own link and the next row's.
        at = distinct(np.concatenate([rows, rows + 1]))
        at = at[(at > 0) & (at < size)]
        cache.links[at] = np.einsum("ij,ij->i", cache.vectors[at], cache.vectors[at - 1])
        cache.last_id = batch.last_id
    cache.filled = size
    present = cache.present[:count]
    return Vectors(cache.vectors[:count], cache.links[:count], present,
                   int(present.sum()))


def candidate_dense(state: SessionState, embedder: Embedder, count: int, asked: np.ndarray,
                    positions: Sequence[int], embedded: int) -> Dense:
    """Dense scores of `positions` alone; `embedded`: how many of the first `count`
    messages have a vector of the query's size."""
    import numpy as np

    store, session_id, model = state.store, state.session_id, embedder.key
    width = len(asked)
    wanted = sorted({p for p in positions if 1 <= p <= count})
    # Each candidate's context vectors are derived from its neighbours' vectors.
    around = sorted({q for p in wanted for q in (p - 1, p, p + 1) if 1 <= q <= count})
    rows = [r for r in store.vectors.vectors_at(session_id, model, around)
            if len(r.vector) == 2 * width]
    if not embedded or not rows:
        return Dense(None, None, embedded)
    read = {r.position: np.frombuffer(r.vector, dtype=np.float16).astype(np.float32)
            for r in rows}
    ranked_at = [p for p in wanted if p in read]
    if not ranked_at:
        return Dense(None, None, embedded)
    none = np.zeros(width, np.float32)

    def around_of(step: int) -> np.ndarray:
        return np.stack([read.get(p + step, none) for p in ranked_at])

    own, before, after = around_of(0), around_of(-1), around_of(1)
    cosine, cosine_before, cosine_after = (similarities(v, asked)
                                           for v in (own, before, after))
    square, square_before, square_after = (
        np.array([float(p + step in read) for p in ranked_at], np.float32)
        for step in (0, -1, 1))
    raw = meaning(cosine, cosine_before, cosine_after, square, square_before,
                  square_after, np.einsum("ij,ij->i", own, before),
                  np.einsum("ij,ij->i", own, after))
    at = np.array([p - 1 for p in ranked_at])
    scores = np.zeros(count, np.float32)
    scores[at] = scaled(raw)
    present = np.zeros(count, dtype=bool)
    present[at] = True

    def rows_at(chosen: Sequence[int]) -> np.ndarray:
        picked = np.zeros((len(chosen), width), np.float32)
        for j, p in enumerate(chosen):
            if p in read:
                picked[j] = read[p]
        return picked

    return Dense(scores, present, embedded, rows_at)
