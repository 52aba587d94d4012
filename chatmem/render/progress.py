"""Progress on the given console: a bar for long replays, a spinner for strategy calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
)
from rich.status import Status
from rich.text import Text

from chatmem.activity import ActivityStep, ActivityWarning, Work
from chatmem.memory.assembly import span
from chatmem.render.terminal import on_screen


@contextmanager
def replay_progress(console: Console, starting: str = "starting the strategies and their "
                    "models") -> Iterator[Callable[[str, int, int], None]]:
    """Yields advance(label, done, total); the bar disappears when the replay ends, and
    shows on a screen only. Until the first step, it says `starting` (loading an embedding
    model took seconds with nothing shown)."""
    with Progress(console=console, transient=True, disable=not on_screen(console)) as bar:
        tasks: dict[str, Any] = {}
        waiting = [bar.add_task(starting, total=None)]

        def advance(label: str, done: int, total: int) -> None:
            while waiting:
                bar.remove_task(waiting.pop())
            if label not in tasks:
                tasks[label] = bar.add_task(f"replaying with {label}", total=total)
            bar.update(tasks[label], completed=done)

        yield advance


@contextmanager
def counted_progress(console: Console, label: str) -> Iterator[Callable[[int, int], None]]:
    """Yields advance(done, total) for a task whose total its first step tells (a fork's
    messages); the bar disappears when it ends, and shows on a screen only. It shows
    `label` at once, its total unknown until that step (an import's first batch came after
    seconds of nothing shown)."""
    with Progress(console=console, transient=True, disable=not on_screen(console)) as bar:
        task = bar.add_task(label, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance


@contextmanager
def opening_status(console: Console, session: str | None, *,
                   one_off: bool = False) -> Iterator[None]:
    """A spinner while a chat (or an ask) opens its session and starts its model (`session`
    None: the last one, --continue; `one_off`: an ask with no session); on a screen only,
    gone when the prompt (the reply's own wait) comes."""
    if not on_screen(console):
        yield
        return
    named = "the last session" if session is None else f"session {session}"
    with console.status(Text("starting the model" if one_off else
                             f"opening {named} and starting its model")):
        yield


class TaskBar:
    """One task's bar: `console` prints above it while it runs."""

    def __init__(self, bar: Progress, label: str, total: int) -> None:
        self.console = bar.console
        self._bar, self._task = bar, bar.add_task(label, total=total)

    def update(self, done: float) -> None:
        self._bar.update(self._task, completed=done)

    def advance(self) -> None:
        self._bar.advance(self._task)


@contextmanager
def task_progress(console: Console, label: str, total: int) -> Iterator[TaskBar]:
    """A bar for one long task (embedding, evaluating a folder); gone when it ends, and
    shown on a screen only (FORCE_COLOR makes a file Rich's terminal: it got the frames)."""
    with Progress(console=console, transient=True, disable=not on_screen(console)) as bar:
        yield TaskBar(bar, label, total)


def step_text(step: ActivityStep, *, bar: bool = False) -> str:
    """"summarizing turns 12–20", "… of 5,000 (catching up)" in a series (without the
    parenthesis beside a `bar`, which shows it)."""
    if step.work is Work.COPYING_TURNS:
        return (f"copying turns {step.first:,}–{step.last:,} of {step.of or step.last:,}"
                " for the what-if")
    turns = span(range(step.first, step.last + 1))
    text = f"extracting facts from {turns}" if step.work is Work.EXTRACTING_FACTS \
        else f"summarizing {turns}"
    if step.of is None:
        return text
    return text + f" of {step.of:,}" + ("" if bar else " (catching up)")


def activity_warning_text(warning: ActivityWarning) -> str:
    """An activity's warning as the user reads it, before the step that follows."""
    parts = " + ".join(f"{kind} {tokens:,}" for kind, tokens in warning.fixed)
    return (f"OVER BUDGET: {parts} + chat format {warning.priming:,} = "
            f"{warning.total:,} tokens, over the context budget of {warning.budget:,}; "
            "sending anyway (--allow-over-budget)")


class _Waited:
    """What the reply's spinner says, redrawn with the whole seconds waited from the first
    (the embedded model reading a long prompt sent nothing for a minute, and nothing said
    whether it was still at work)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.since = time.monotonic()

    def __rich__(self) -> Text:
        seconds = int(time.monotonic() - self.since)
        waited = f" · {seconds:,} s" if seconds else ""
        return Text.assemble(f"waiting for {self.model}{waited}",
                             ("  Ctrl-C cancels the reply", "dim"))


class ConsoleActivity:
    """An `Activity` (chatmem.activity) shown on a console, stderr in the CLI.

    A step shows a spinner naming it while it runs, and a series (a catch-up) one bar
    from its first step to its end, each step renaming and advancing it; on a terminal
    only (a pipe gets no animation). Warnings are printed in every mode.
    """

    def __init__(self, console: Console,
                 hint: str = "Ctrl-C skips it; the turn is kept") -> None:
        self.console = console
        self.hint = hint
        """What Ctrl-C does meanwhile, shown beside the step."""
        self.shown: set[ActivityWarning] = set()
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._waiting: _Waited | None = None
        """What the reply's spinner says while the model has sent nothing (awaiting_reply)."""
        self._spinner: Status | None = None

    @contextmanager
    def awaiting_reply(self, model: str) -> Iterator[Callable[[], None]]:
        """A spinner from the input's sending to the reply's first words, which the function
        it yields ends; on a terminal only. A model that is slow to start (a remote one's
        first token, a local one loading) left a blank line under the input for seconds,
        nothing said what it waited for. A strategy's step meanwhile shows instead of it."""
        if not on_screen(self.console):
            yield lambda: None
            return
        self._waiting = _Waited(model)

        def end() -> None:
            self._waiting = None
            self._spin(False)

        self._spin(True)
        try:
            yield end
        finally:
            end()

    def _spin(self, on: bool) -> None:
        # A new spinner each time: a stopped Live drawn again moved up over the lines above.
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None
        if on and self._waiting is not None:
            self._spinner = self.console.status(self._waiting)
            self._spinner.start()

    @contextmanager
    def _step_shown(self) -> Iterator[None]:
        """The reply's spinner off while a step's own shows."""
        self._spin(False)
        try:
            yield
        finally:
            self._spin(True)

    @contextmanager
    def series(self) -> Iterator[None]:
        if not on_screen(self.console) or self._bar is not None:
            yield  # a series inside one is part of it
            return
        with self._step_shown():
            yield from self._series()

    def _series(self) -> Iterator[None]:
        # The description says how far ("turns 225–280 of 2,000"): with a short bar and the
        # hint it fits 80 columns.
        bar = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                       BarColumn(bar_width=8), TextColumn(f"[dim]{escape(self.hint)}"),
                       console=self.console, transient=True)
        self._bar, self._task = bar, None
        try:
            with bar:
                yield
        finally:
            self._bar = self._task = None

    @contextmanager
    def doing(self, step: ActivityStep) -> Iterator[None]:
        if not on_screen(self.console):
            yield
            return
        if self._bar is not None:
            yield from self._step_of_series(self._bar, step)
            return
        with self._step_shown(), self.console.status(
                Text.assemble(step_text(step), (f"  {self.hint}", "dim"))):
            yield

    def _step_of_series(self, bar: Progress, step: ActivityStep) -> Iterator[None]:
        # The bar counts turns: those before the step are done while it runs.
        total = step.of or step.last
        if self._task is None:
            self._task = bar.add_task("", total=total)
        bar.update(self._task, description=escape(step_text(step, bar=True)), total=total,
                   completed=step.first - 1)
        yield
        bar.update(self._task, completed=step.last)

    def warn(self, warning: ActivityWarning, *, once: bool = False) -> None:
        if once and warning in self.shown:
            return
        self.shown.add(warning)
        self.console.print(Text(f"⚠ {activity_warning_text(warning)}", style="bold yellow"),
                           soft_wrap=not on_screen(self.console))
