"""A plugin's embedder, its unknown exceptions and wrong vectors made chatmem's
(EmbedderFailed): one line naming it, as chatmem.providers.guarded does for a provider."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from chatmem.errors import EmbedderFailed
from chatmem.plugin_calls import guarded, kind_of
from chatmem.plugin_output import plugin_prints_to_stderr

if TYPE_CHECKING:
    import numpy as np

    from chatmem.embeddings.base import Embedder


class GuardedEmbedder:
    """`inner`, whose exceptions other than chatmem's are EmbedderFailed, and whatever it
    raises with `mask` applied to its text (its client's error may quote the key)."""

    def __init__(self, inner: Embedder, name: str,
                 mask: Callable[[str], str] | None = None) -> None:
        self.inner = inner
        self._name = name
        self.registered_name = name
        """What `[embeddings] provider` names (memory.vector_rows.embedder_name)."""
        self._mask = mask

    @property
    def key(self) -> str:
        return self.inner.key

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        with plugin_prints_to_stderr():  # not into a command's --json (plugin_output)
            returned = guarded(lambda e: EmbedderFailed(self._name, e),
                               lambda: self.inner.embed(texts, query=query), self._mask)
        rows, wrong = self._rows(returned, len(texts))
        if wrong is not None:
            # Checked here, once: else a wrong shape fails later in chatmem's recall or
            # index, blamed on them, and a NaN row is stored and ranks every message as NaN.
            raise EmbedderFailed(self._name, f"its embed returned {wrong}")
        return rows

    def _rows(self, returned: object, count: int) -> tuple[np.ndarray, str | None]:
        """`returned` as a float32 array of `count` rows of `dimensions` finite numbers
        (a list or float64 will do), or what is wrong with it."""
        import numpy as np

        try:
            rows = np.asarray(returned, dtype=np.float32)
        except (TypeError, ValueError):
            return np.empty(0), f"{kind_of(returned)}, not an array of numbers"
        width = guarded(lambda e: EmbedderFailed(self._name, e), lambda: self.inner.dimensions,
                        self._mask)
        if count == 0 and rows.size == 0:
            return np.zeros((0, width), dtype=np.float32), None
        if rows.shape != (count, width):
            return rows, (f"an array of shape {rows.shape} for {count} texts; it should be "
                          f"({count}, {width}): one row per text, as wide as its dimensions")
        with np.errstate(all="ignore"):
            finite = bool(np.isfinite(rows).all())
        if not finite:
            return rows, "a vector holding NaN or infinity"
        return rows, None

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.inner, attribute)
