"""An Activity for tests: it keeps the label of every step it was told about."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from chatmem.activity import ActivityStep, ActivityWarning


class Recording:
    """An Activity that keeps what it was told."""

    def __init__(self) -> None:
        self.steps: list[ActivityStep] = []
        self.series_count = 0

    @contextmanager
    def doing(self, step: ActivityStep) -> Iterator[None]:
        self.steps.append(step)
        yield

    @contextmanager
    def series(self) -> Iterator[None]:
        self.series_count += 1
        yield

    def warn(self, warning: ActivityWarning, *, once: bool = False) -> None:
        pass
