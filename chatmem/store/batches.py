"""Values sent to a statement a batch at a time, as an `IN (?, ?, …)` list: a session's
ids or positions can be tens of thousands, more than one statement may bind."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

BATCH = 500
"""Values bound by one statement at most."""


def in_batches(values: Sequence[T], size: int = BATCH) -> Iterator[tuple[Sequence[T], str]]:
    """`values` in batches of `size`, in order, each with its placeholders ("?, ?, …")."""
    for start in range(0, len(values), size):
        batch = values[start : start + size]
        yield batch, ", ".join("?" for _ in batch)
