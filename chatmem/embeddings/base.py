"""The embedder protocol: texts in, unit-length vectors out."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    """Turns texts into vectors whose dot product is their cosine similarity."""

    @property
    def key(self) -> str:
        """`provider:model`: vectors are stored under it, so two models never mix."""
        ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """A (len(texts) × dimensions) float32 array of L2-normalised rows.

        `query` marks a search query rather than a stored message (models such
        as e5 embed the two differently).
        """
        ...


def load(embedder: object) -> None:
    """Open `embedder`'s model now, if it has an optional `load()` (the bundled e5 reads its
    weights on first use, else): what a front end does before the first message."""
    opening = getattr(embedder, "load", None)
    if callable(opening):
        opening()


def normalised(rows: np.ndarray) -> np.ndarray:
    import numpy as np

    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1, norms)


def checked_rows(returned: object, count: int,
                 width: int | None) -> tuple[np.ndarray, str | None]:
    """`returned` (an embedder's or an endpoint's answer) as a float32 array of `count` rows
    of `width` finite numbers (any one width when None; a list or float64 will do), or what
    is wrong with it: a NaN row is stored and ranks every message as NaN, turning recall by
    meaning off without a word; a wrong shape fails later in recall or index, blamed on them."""
    import numpy as np

    try:
        rows = np.asarray(returned, dtype=np.float32)
    except (TypeError, ValueError):
        lengths = _lengths(returned)
        return np.empty(0), (f"vectors of different lengths ({lengths})" if lengths else
                             f"{type(returned).__name__ if returned is not None else 'None'},"
                             " not an array of numbers")
    if count == 0 and rows.size == 0:
        return np.zeros((0, width or 0), dtype=np.float32), None
    if rows.ndim != 2 or rows.shape[0] != count or (
            rows.shape[1] != width if width is not None else rows.shape[1] == 0):
        shown = f"({count}, {width})" if width is not None else f"({count}, its width)"
        return rows, (f"an array of shape {rows.shape} for {count} texts; it should be "
                      f"{shown}: one row per text, as wide as its dimensions")
    with np.errstate(all="ignore"):
        finite = bool(np.isfinite(rows).all())
    if not finite:
        return rows, "a vector holding NaN or infinity"
    return rows, None


def _lengths(returned: object) -> str:
    """The lengths of `returned`'s rows, when it is rows of numbers of different lengths."""
    try:
        lengths = sorted({len(row) for row in returned})  # type: ignore[attr-defined]
    except TypeError:
        return ""
    return " and ".join(map(str, lengths[:4])) if len(lengths) > 1 else ""


def text_digest(text: str) -> str:
    """What a vector is cached by: the sha256 of the exact text it embeds."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorCache(Protocol):
    """Vectors kept across processes, by (model, stored or query, digest of the text)."""

    def cached(self, model: str, query: bool, digests: Sequence[str]) -> dict[str, bytes]: ...

    def keep(self, model: str, query: bool, vectors: Sequence[tuple[str, bytes]]) -> None: ...


def cached_dtype(query: bool) -> str:
    """How a cached vector is kept: stored texts as float16, as their vectors are stored
    (so a cached one is the same), queries as float32, as recall uses them."""
    return "float32" if query else "float16"


KEEP_EVERY = 256
"""Vectors an eval writes to the cache file at once. Each write is a transaction the
file syncs to disk (10–25 ms on a busy disk): one after each turn's two messages and
each query was about a sixth of a cold eval's time on 2 busy cores."""


class Remembering:
    """An embedder that embeds each distinct text once, for runs over the same conversation.

    Replay and eval run one transcript under several strategies: the vectors
    are the same for each, so they are computed for the first and reused.
    With a `cache` (a file kept between runs), a text embedded by an earlier
    run is not embedded again; a vector then comes out as it was kept
    (`cached_dtype`), first run or not, so both give the same results.
    With `keep_every` above 1, vectors are written to the cache that many at
    once, and `flush` writes the rest (see KEEP_EVERY).
    """

    def __init__(self, inner: Embedder, cache: VectorCache | None = None,
                 keep_every: int = 1) -> None:
        self.inner = inner
        self.key = inner.key
        self.cache = cache
        self.keep_every = keep_every
        self._seen: dict[tuple[str, bool], np.ndarray] = {}
        self._unkept: dict[bool, list[tuple[str, bytes]]] = {False: [], True: []}

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def load(self) -> None:
        load(self.inner)

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        missing = self.not_kept(texts, query)
        if missing:
            rows = self.inner.embed(missing, query=query)
            if self.cache is not None:
                kept = np.asarray(rows, dtype=cached_dtype(query))
                self._unkept[query].extend((text_digest(t), v.tobytes())
                                           for t, v in zip(missing, kept, strict=True))
                if sum(map(len, self._unkept.values())) >= self.keep_every:
                    self.flush()
                rows = kept.astype(np.float32)
            for text, row in zip(missing, rows, strict=True):
                self._seen[(text, query)] = row
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([self._seen[(t, query)] for t in texts])

    def not_kept(self, texts: Sequence[str], query: bool) -> list[str]:
        """The distinct `texts` neither embedded here nor in the cache file (those it holds
        are taken from it now): what `embed` would embed."""
        missing = list(dict.fromkeys(t for t in texts if (t, query) not in self._seen))
        if missing and self.cache is not None:
            missing = self._from_cache(missing, query)
        return missing

    def know(self, vectors: Mapping[tuple[str, bool], np.ndarray]) -> None:
        """Take `vectors` (by text and whether a query) as embedded here: embedded ahead,
        by other processes, as this would have embedded them (see chatmem.cli.corpus_embedding)."""
        self._seen.update(vectors)

    def flush(self) -> None:
        """Write the vectors embedded since the last write to the cache file."""
        for query in (False, True):
            vectors, self._unkept[query] = self._unkept[query], []
            if vectors and self.cache is not None:
                self.cache.keep(self.key, query, vectors)

    def _from_cache(self, texts: list[str], query: bool) -> list[str]:
        """Remember what the cache has; the texts it has not."""
        import numpy as np

        assert self.cache is not None
        digests = [text_digest(t) for t in texts]
        found = self.cache.cached(self.key, query, digests)
        dtype = cached_dtype(query)
        size = self.inner.dimensions * np.dtype(dtype).itemsize
        if not size:
            # An endpoint's width is known from its first answer: until then, the cache's
            # will do when its vectors agree (else every process sent its first texts again).
            sizes = {len(blob) for blob in found.values()}
            size = sizes.pop() if len(sizes) == 1 else -1
        found = {d: blob for d, blob in found.items() if len(blob) == size}  # else: embed anew
        for text, digest in zip(texts, digests, strict=True):
            if digest in found:
                self._seen[(text, query)] = np.frombuffer(found[digest],
                                                          dtype=dtype).astype(np.float32)
        return [t for t, d in zip(texts, digests, strict=True) if d not in found]


class Collecting:
    """Stands in for an embedder in a dry run of a replay, to learn what it will embed: it
    notes each text asked (and whether as a query) in `asked`, in order, and answers one
    and the same unit vector for every text. Which texts a replay embeds does not depend
    on their vectors (messages as they are stored, each probe's query), so the texts are
    those a real run asks for, at a small part of its cost."""

    WIDTH = 8

    def __init__(self, inner: Embedder, asked: dict[tuple[str, bool], None]) -> None:
        self.key = inner.key
        self.asked = asked
        self.dimensions = self.WIDTH

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        self.asked.update(((t, query), None) for t in texts)
        rows = np.zeros((len(texts), self.WIDTH), dtype=np.float32)
        rows[:, 0] = 1.0
        return rows
