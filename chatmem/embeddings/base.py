"""The embedder protocol: texts in, unit-length vectors out."""

from __future__ import annotations

from collections.abc import Sequence
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


def normalised(rows: np.ndarray) -> np.ndarray:
    import numpy as np

    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1, norms)


class Remembering:
    """An embedder that embeds each distinct text once, for runs over the same conversation.

    Replay and eval run one transcript under several strategies: the vectors
    are the same for each, so they are computed for the first and reused.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.key = inner.key
        self._seen: dict[tuple[str, bool], np.ndarray] = {}

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        import numpy as np

        missing = list(dict.fromkeys(t for t in texts if (t, query) not in self._seen))
        if missing:
            for text, row in zip(missing, self.inner.embed(missing, query=query), strict=True):
                self._seen[(text, query)] = row
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([self._seen[(t, query)] for t in texts])
