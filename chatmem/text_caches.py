"""The process's caches of what people wrote, and of what was worked out from it, emptied
together after an erasure.

A cache keyed by a text (a phone number a purge looked for, the values a secret guard
follows, a message's words) or holding what was read from one (its sensitive details)
keeps that text in memory for as long as the process runs: for `serve` and `mcp`, days
after a purge erased it from the history. Each registers here, and `forget_texts` (run
after every erasure, with the vector cache's removal) empties them all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import _lru_cache_wrapper, lru_cache
from typing import Protocol, TypeVar

T = TypeVar("T")


class Clearable(Protocol):
    def cache_clear(self) -> None: ...


_CACHES: list[Clearable] = []
_LOCK = threading.Lock()


def kept(cache: Clearable) -> None:
    """Register `cache`, to be emptied by `forget_texts`."""
    with _LOCK:
        _CACHES.append(cache)


def text_cache(maxsize: int | None) -> Callable[[Callable[..., T]], _lru_cache_wrapper[T]]:
    """functools.lru_cache(maxsize), registered (`kept`)."""
    def wrap(work: Callable[..., T]) -> _lru_cache_wrapper[T]:
        cached = lru_cache(maxsize=maxsize)(work)
        kept(cached)
        return cached
    return wrap


def forget_texts() -> None:
    """Empty every registered cache: what an erasure took out of the history is not kept in
    this process either."""
    with _LOCK:
        caches = list(_CACHES)
    for cache in caches:
        cache.cache_clear()
