"""How core code says what it is doing without printing.

The engine and the strategies call a model outside the reply (summaries, fact
extraction) and sometimes need to warn before a call. They report through an
`Activity` passed down from the REPL or CLI, which shows a spinner or a line;
by default nothing is shown. A catch-up is a series of such steps, reported inside
`series()` so it shows as one task, the work between the steps included. A leaf
module: it imports nothing of chatmem.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Protocol


class Work(Enum):
    """What a slow step does; chatmem.render.progress words it."""

    SUMMARIZING = "summarizing"
    EXTRACTING_FACTS = "extracting facts"
    COPYING_TURNS = "copying turns"
    """Copying a session's history into a what-if's scratch store."""


@dataclass(frozen=True)
class ActivityStep:
    """A slow step over turns `first`..`last`; `of`: the turns in all, when the step is one
    of a series (catching up on an imported history, copying for a what-if)."""

    work: Work
    first: int
    last: int
    of: int | None = None


@dataclass(frozen=True)
class SendingOverBudget:
    """An input sent over the budget because the user allowed it (--allow-over-budget).

    `fixed`: the parts no strategy can drop, as (kind, tokens); `priming`: the chat
    format's tokens beyond them."""

    fixed: tuple[tuple[str, int], ...]
    priming: int
    budget: int

    @property
    def total(self) -> int:
        return sum(tokens for _, tokens in self.fixed) + self.priming


ActivityWarning = SendingOverBudget
"""What an activity warns of; chatmem.render.progress words it."""


class Activity(Protocol):
    def doing(self, step: ActivityStep) -> AbstractContextManager[None]:
        """Around a slow step: `with activity.doing(ActivityStep(Work.SUMMARIZING, 12, 20))`."""
        ...

    def series(self) -> AbstractContextManager[None]:
        """Around a series of steps (a catch-up, a what-if's copy and rebuild): shown as one
        task from its first step to its end, the time between steps included. A series
        inside a series is part of the outer one."""
        ...

    def warn(self, warning: ActivityWarning, *, once: bool = False) -> None:
        """Something the user must see now, before the step that follows.

        With `once`, a warning already shown by this activity is not shown again.
        """
        ...


class Quiet:
    """Shows nothing: tests, replay, and any caller that did not ask for progress."""

    @contextmanager
    def doing(self, step: ActivityStep) -> Iterator[None]:
        yield

    @contextmanager
    def series(self) -> Iterator[None]:
        yield

    def warn(self, warning: ActivityWarning, *, once: bool = False) -> None:
        pass


QUIET = Quiet()
