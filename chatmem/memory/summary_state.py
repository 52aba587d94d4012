"""A summary strategy's state as stored for one session: its latest summary, the last turn
folded into it, why an update failed, and its pins (chatmem.memory.pins)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from chatmem.memory import pins

if TYPE_CHECKING:
    from chatmem.memory.state import SessionState
    from chatmem.store import SummaryRecord

T = TypeVar("T")


@dataclass
class SummaryState:
    """A summary strategy's derived state, as stored for one session."""

    latest: SummaryRecord | None = None
    boundary: int = 0
    """The last turn folded into the summary: nothing at or before it is summarized again."""
    behind: str | None = None
    """Why the last update failed, while turns after `boundary` wait to be folded in."""
    pins: list[pins.Pin] = field(default_factory=list)
    """Drift-guard anchors the summary dropped, oldest first, with where they were said."""
    unpinned: list[str] = field(default_factory=list)
    """Anchors the user unpinned: the drift guard never pins them again."""
    released: int = 0
    """Pins let go, oldest first, to keep the pins within their share of the budget."""
    rebuilt: bool = False
    """The pins were rebuilt from the summaries (another role's upkeep wrote the state):
    bare, their turns and quotes looked for again at the next update."""

    @property
    def text(self) -> str:
        return self.latest.text if self.latest else ""


def load_state(state: SessionState, strategy: str) -> SummaryState:
    """The strategy's stored state: latest summary, boundary, pins (in another's session
    shared for writing, this role's own: store.writer_state.PER_WRITER)."""
    values = state.get(strategy)

    def read(key: str, how: Callable[[Any], T], default: Any = None) -> T:
        try:
            return how(values.get(key, default))
        except pins.UNREADABLE:
            # JSON, yet not what chatmem stored (a hand's or a write grantee's SQL): named,
            # with how its owner drops that state, never a traceback.
            raise state.store.memory.state_row(state.session_id, strategy, key).error(
                pins.NOT_AS_STORED) from None

    latest = state.store.memory.latest_summary(state.session_id, strategy)
    if latest is not None and "boundary_turn" not in values:
        return _from_summaries(state, strategy, latest)
    # Never before the turn the latest summary ends at: in another's session a write share's
    # grantee keeps his own state (store.memory_state.PER_WRITER) while the summaries are
    # the session's, and one the owner added since his last update already folds those turns
    # (one writer's state and summaries move together: the same turn).
    return SummaryState(
        latest=latest,
        boundary=max(read("boundary_turn", int, 0), latest.last_turn or 0 if latest else 0),
        behind=read("behind", lambda v: str(v) if v else None),
        pins=read(pins.PINNED_KEY, pins.parse_pins),
        unpinned=read(pins.UNPINNED_KEY, lambda v: [str(u) for u in v], []),
        released=read("released", int, 0),
    )


def _from_summaries(state: SessionState, strategy: str, latest: SummaryRecord) -> SummaryState:
    """A summary with no boundary beside it: the state reads as absent (on PostgreSQL a write
    share's grantee's turn wrote it, whose upkeep rewrites every key) while the summaries
    are the reader's own. The latest ends where its last message is, so the update goes on
    from there and never folds again what it holds; the pins are what the reader's versions
    dropped and no later one said again, bare (their quotes were in the state), less those
    the user unpinned (a row the grantee's upkeep leaves hers; none while another role
    wrote it: an unpin is never undone). With the drift guard off, none: she asked for no pins."""
    if not state.drift_guard:
        return SummaryState(latest=latest, boundary=latest.last_turn or 0)
    rebuilt = pins.rebuilt_pins(state.store.memory, state.session_id, strategy)
    if rebuilt is None:  # what she unpinned is not known: no pin may bring one back
        return SummaryState(latest=latest, boundary=latest.last_turn or 0)
    return SummaryState(latest=latest, boundary=latest.last_turn or 0, pins=rebuilt[0],
                        unpinned=rebuilt[1], rebuilt=True)


def moved(now: SummaryState, then: SummaryState) -> bool:
    """Whether another process stored a summary since `then` was read."""
    version = now.latest.version if now.latest else 0
    return (now.boundary, version) != (then.boundary, then.latest.version if then.latest else 0)
