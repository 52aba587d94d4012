"""What the vector backlog (chatmem.memory.vector_backlog) has to tell, as values: its
thread stopped or retrying, vectors of another size embedded again; and `Failure`, why a
step failed, as those notices and a replay's carry it.

Among chatmem.notices.Notice; only chatmem.render.notices words them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True)
class Failure:
    """Why a step failed: the error's message and, for an error chatmem did not raise itself
    (a bug, a library's exception), the exception's class name, e.g. `RuntimeError`."""

    message: str
    unexpected: str | None = None
    culprit: tuple[str, str] | None = None
    """(kind, name) of the code that failed when chatmem does not own it (ExtensionFailed):
    the wording names the plugin that registered it, as the error's own line does."""

    @classmethod
    def of(cls, error: BaseException, expected: type[BaseException]) -> Failure:
        """`error` as a Failure; its class is named unless it is an `expected` one."""
        if isinstance(error, expected):
            return cls(str(error))
        return cls(str(error), type(error).__name__)


class IndexingEvent(Enum):
    """What happened to the vector backlog (chatmem.memory.vector_backlog)."""

    STOPPED = "stopped"
    """Its thread failed: no more vectors this process; `chatmem index` retries."""
    RETRYING = "retrying"
    """Going on after a commit failed; the next turn tries again."""
    NOT_STORED = "not stored"
    """What its thread embedded could not be stored yet; the next turn tries again."""


@dataclass(frozen=True)
class IndexingNotice:
    """The vector backlog's `event`, and the failure behind it."""

    event: IndexingEvent
    failure: Failure
    in_replay: bool = False
    """Met by a replay or an eval, which says it once per run: no chat's "next turn" retries
    it there (a kept replay has none; a saved one's backlog is said with its name)."""


@dataclass(frozen=True)
class VectorsResized:
    """Embedder `embedder` (its registered name) now gives vectors of `dimensions`, and the
    `stale` vectors stored under its key `model` had another size (`sizes`: each size held):
    they are embedded again. Said once per backlog, and by `chatmem index`."""

    embedder: str
    model: str
    dimensions: int
    stale: int
    sizes: tuple[int, ...]
