"""Named migrations in the order they run: the list each backend's schema module keeps.

A migration is known by its function's name, recorded once applied; a released
one is never edited (a schema change is a new function).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

M = TypeVar("M", bound=Callable[..., Any])


class MigrationList(Generic[M]):
    def __init__(self) -> None:
        self.functions: list[M] = []
        """Every migration, in the order they run."""

    def add(self, fn: M) -> M:
        """Register `fn` as the next migration (used as a decorator)."""
        self.functions.append(fn)
        return fn

    def names(self) -> set[str]:
        return {fn.__name__ for fn in self.functions}

    def pending(self, applied: set[str]) -> list[str]:
        """Names of the migrations not in `applied`, in the order they run."""
        return [fn.__name__ for fn in self.functions if fn.__name__ not in applied]
