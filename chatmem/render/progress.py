"""A progress bar for long replays: one task per strategy, on the given console."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import Progress


@contextmanager
def replay_progress(console: Console) -> Iterator[Callable[[str, int, int], None]]:
    """Yields advance(label, done, total); the bar disappears when the replay ends."""
    with Progress(console=console, transient=True) as bar:
        tasks: dict[str, Any] = {}

        def advance(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(f"replaying with {label}", total=total)
            bar.update(tasks[label], completed=done)

        yield advance
