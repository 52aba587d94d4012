"""A plugin's embedder, its unknown exceptions made chatmem's (EmbedderFailed): one line
naming it, as chatmem.providers.guarded does for a provider."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from chatmem.errors import EmbedderFailed, guarded

if TYPE_CHECKING:
    import numpy as np

    from chatmem.embeddings.base import Embedder


class GuardedEmbedder:
    """`inner`, whose exceptions other than chatmem's are EmbedderFailed."""

    def __init__(self, inner: Embedder, name: str) -> None:
        self.inner = inner
        self._name = name

    @property
    def key(self) -> str:
        return self.inner.key

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        return guarded(lambda e: EmbedderFailed(self._name, e),
                       lambda: self.inner.embed(texts, query=query))

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.inner, attribute)
