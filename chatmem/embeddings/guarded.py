"""A plugin's embedder, its unknown exceptions and wrong vectors made chatmem's
(EmbedderFailed): one line naming it, as chatmem.providers.guarded does for a provider."""

from __future__ import annotations

import operator
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from chatmem.embeddings.base import checked_rows, load
from chatmem.errors import EmbedderFailed
from chatmem.plugin_calls import guarded, kind_of
from chatmem.plugin_output import plugin_prints_to_stderr

if TYPE_CHECKING:
    import numpy as np

    from chatmem.embeddings.base import Embedder


SLOW_EMBED = 2.0
"""Seconds a plugin embedder's calls may take in one turn before the turn says it waited."""


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
        self._took, self._calls = 0.0, 0
        self._slow_said = False
        self._timing = threading.Lock()  # a background indexer embeds as a turn's build does

    def took_slowly(self) -> tuple[float, int] | None:
        """The seconds its embed calls took since last asked, and how many calls, when
        SLOW_EMBED seconds or more and
        this embedder has not said so before (once per embedder: per engine, or per process
        where a server shares it); else None. A plugin's 3 s a call made `ask` take 9 s with
        its turn line saying 0.0 s and nothing naming the embedder."""
        with self._timing:
            took, calls, self._took, self._calls = self._took, self._calls, 0.0, 0
            if took < SLOW_EMBED or self._slow_said:
                return None
            self._slow_said = True
        return took, calls

    @property
    def key(self) -> str:
        key = self._read("key")
        if not isinstance(key, str) or ":" not in key:
            # Vectors are stored and looked up under it, and its provider is read off it.
            raise self._refused(f"its key is {_shown(key)}, not text of the form "
                                "provider:model")
        return key

    @property
    def dimensions(self) -> int:
        dimensions = self._read("dimensions")
        # A numpy integer will do, as an int (operator.index): kept as it was, sqlite3
        # binds it as a BLOB no stored size equals, and `index` embedded the same
        # messages again forever. 0 is an endpoint's "not known before its first answer".
        whole = None if isinstance(dimensions, bool) else _whole(dimensions)
        if whole is None or whole < 0:
            raise self._refused(f"its dimensions is {_shown(dimensions)}, not a whole "
                                "number of 0 or more")
        return whole

    def _refused(self, wrong: str) -> EmbedderFailed:
        # What it is may quote a secret (a key built from its settings).
        return EmbedderFailed(self._name, wrong if self._mask is None else self._mask(wrong))

    def _read(self, attribute: str) -> object:
        return guarded(lambda e: EmbedderFailed(self._name, e),
                       lambda: getattr(self.inner, attribute), self._mask)

    def load(self) -> None:
        """The plugin's optional `load()`, guarded as `embed` is."""
        with plugin_prints_to_stderr():
            guarded(lambda e: EmbedderFailed(self._name, e), lambda: load(self.inner),
                    self._mask)

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        started = time.monotonic()
        try:
            with plugin_prints_to_stderr():  # not into a command's --json (plugin_output)
                returned = guarded(lambda e: EmbedderFailed(self._name, e),
                                   lambda: self.inner.embed(texts, query=query), self._mask)
        finally:
            with self._timing:
                self._took += time.monotonic() - started
                self._calls += 1
        rows, wrong = checked_rows(returned, len(texts), self.dimensions)
        if wrong is not None:
            # Checked here, once: else a wrong shape fails later in chatmem's recall or
            # index, blamed on them, and a NaN row is stored and ranks every message as NaN.
            raise EmbedderFailed(self._name, f"its embed returned {wrong}")
        return rows

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.inner, attribute)


def _whole(value: object) -> int | None:
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def _shown(value: object) -> str:
    """A plugin's wrong value in one line: a number or short text as itself, else its kind."""
    if isinstance(value, int | float | str) and len(repr(value)) <= 40:
        return repr(value)
    return kind_of(value)
