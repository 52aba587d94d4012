"""An Activity for tests: it keeps the label of every step it was told about."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class Recording:
    """An Activity that keeps what it was told."""

    def __init__(self) -> None:
        self.steps: list[str] = []

    @contextmanager
    def doing(self, what: str) -> Iterator[None]:
        self.steps.append(what)
        yield

    def warn(self, message: str, *, once: bool = False) -> None:
        pass
