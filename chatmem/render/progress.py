"""Progress on the given console: a bar for long replays, a spinner for strategy calls."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.text import Text

from chatmem.activity import ActivityStep, ActivityWarning, Work
from chatmem.memory.assembly import span


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


@contextmanager
def counted_progress(console: Console, label: str, *,
                     disable: bool = False) -> Iterator[Callable[[int, int], None]]:
    """Yields advance(done, total) for a task whose total its first step tells (a fork's
    messages); the bar disappears when it ends."""
    with Progress(console=console, transient=True, disable=disable) as bar:
        tasks: list[Any] = []

        def advance(done: int, total: int) -> None:
            if not tasks:
                tasks.append(bar.add_task(label, total=total))
            bar.update(tasks[0], completed=done, total=total)

        yield advance


class TaskBar:
    """One task's bar: `console` prints above it while it runs."""

    def __init__(self, bar: Progress, label: str, total: int) -> None:
        self.console = bar.console
        self._bar, self._task = bar, bar.add_task(label, total=total)

    def update(self, done: int) -> None:
        self._bar.update(self._task, completed=done)

    def advance(self) -> None:
        self._bar.advance(self._task)


@contextmanager
def task_progress(console: Console, label: str, total: int, *,
                  disable: bool = False) -> Iterator[TaskBar]:
    """A bar for one long task (embedding, evaluating a folder); gone when it ends."""
    with Progress(console=console, transient=True, disable=disable) as bar:
        yield TaskBar(bar, label, total)


def step_text(step: ActivityStep) -> str:
    """"summarizing turns 12–20", "… of 5,000 (catching up)" in a series."""
    if step.work is Work.COPYING_TURNS:
        return (f"copying turns {step.first:,}–{step.last:,} of {step.of or step.last:,}"
                " for the what-if")
    turns = span(range(step.first, step.last + 1))
    text = f"extracting facts from {turns}" if step.work is Work.EXTRACTING_FACTS \
        else f"summarizing {turns}"
    return text + (f" of {step.of:,} (catching up)" if step.of is not None else "")


def activity_warning_text(warning: ActivityWarning) -> str:
    """An activity's warning as the user reads it, before the step that follows."""
    parts = " + ".join(f"{kind} {tokens:,}" for kind, tokens in warning.fixed)
    return (f"OVER BUDGET: {parts} + chat format {warning.priming:,} = "
            f"{warning.total:,} tokens, over the context budget of {warning.budget:,}; "
            "sending anyway (--allow-over-budget)")


class ConsoleActivity:
    """An `Activity` (chatmem.activity) shown on a console, stderr in the CLI.

    A step shows a spinner naming it while it runs, on a terminal only (a pipe
    gets no animation); warnings are printed in every mode.
    """

    def __init__(self, console: Console,
                 hint: str = "Ctrl-C skips it; the turn is kept") -> None:
        self.console = console
        self.hint = hint
        """What Ctrl-C does meanwhile, shown beside the step."""
        self.shown: set[ActivityWarning] = set()

    @contextmanager
    def doing(self, step: ActivityStep) -> Iterator[None]:
        if not self.console.is_terminal:
            yield
            return
        with self.console.status(Text.assemble(step_text(step), (f"  {self.hint}", "dim"))):
            yield

    def warn(self, warning: ActivityWarning, *, once: bool = False) -> None:
        if once and warning in self.shown:
            return
        self.shown.add(warning)
        self.console.print(Text(f"⚠ {activity_warning_text(warning)}", style="bold yellow"),
                           soft_wrap=not self.console.is_terminal)
