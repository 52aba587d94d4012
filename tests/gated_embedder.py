"""An embedder whose stored-text calls the test lets through one by one: the test decides how
far a backlog of messages to embed gets (tests of the vector backlog, of a conversation's end)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from waiting import HANG

from chatmem.embeddings.hashed import HashEmbedder

WAIT = HANG
"""Seconds a gated call waits for the test before it fails (only against a hang)."""


class GatedEmbedder(HashEmbedder):
    """The hash embedder, whose stored-text calls wait until the test lets `allowed` more
    of them through: the test decides how far the backlog gets."""

    def __init__(self) -> None:
        super().__init__()
        self.allowed = 0
        self.finished = 0
        self._cond = threading.Condition()

    def allow(self, calls: int) -> None:
        with self._cond:
            self.allowed += calls
            self._cond.notify_all()

    def embed(self, texts: Sequence[str], *, query: bool = False):  # type: ignore[no-untyped-def]
        if not query:
            with self._cond:
                if not self._cond.wait_for(lambda: self.allowed > 0, timeout=WAIT):
                    raise TimeoutError("the test never let this batch through")
                self.allowed -= 1
        rows = super().embed(texts, query=query)
        if not query:
            with self._cond:
                self.finished += 1
                self._cond.notify_all()
        return rows

    def wait_finished(self, calls: int) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: self.finished >= calls, timeout=WAIT)
