"""What is worked out from one text alone, kept by the text's digest.

A catch-up of a long history, or a replay, reads each message once per strategy (the
summary strategies, the fact extractor, each part of a combination), and what it checks
in one (its sensitive details, the drift guard's anchors) costs far more than hashing it.
Strategies catch up one after another, so a few hundred kept results are gone before the
next strategy reads the first message again: the cache holds tens of thousands, keyed by
a 16-byte digest so that it holds no copy of a message, however long.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import update_wrapper
from typing import Generic, TypeVar

from chatmem.text_caches import kept

T = TypeVar("T")

KEPT = 32768
"""Results kept per function: the messages of several thousand turns and the summaries,
quotes and masked copies made of them."""


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class by_digest(Generic[T]):  # a decorator, named as functools' are
    """`work`, a function of its text alone returning a value no caller changes, with its
    results kept (the least recently used let go past KEPT)."""

    def __init__(self, work: Callable[[str], T]) -> None:
        self.work = work
        self._known: OrderedDict[bytes, T] = OrderedDict()
        self._lock = threading.Lock()  # a server's turns and its catch-ups run in threads
        update_wrapper(self, work)
        kept(self)  # emptied after an erasure: its results may hold what was erased

    def __call__(self, text: str) -> T:
        key = digest(text)
        with self._lock:
            if key in self._known:
                self._known.move_to_end(key)
                return self._known[key]
        value = self.work(text)
        with self._lock:
            self._known[key] = value
            if len(self._known) > KEPT:
                self._known.popitem(last=False)
        return value

    def cache_clear(self) -> None:
        """Forget every result (as functools' caches do: a test reads as a new process)."""
        with self._lock:
            self._known.clear()
