"""A summary strategy's state as stored for one session: its latest summary, the last turn
folded into it, why an update failed, and its pins (chatmem.memory.pins)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from chatmem.memory import pins

if TYPE_CHECKING:
    from chatmem.memory.state import SessionState
    from chatmem.store import SummaryRecord


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

    @property
    def text(self) -> str:
        return self.latest.text if self.latest else ""


def load_state(state: SessionState, strategy: str) -> SummaryState:
    """The strategy's stored state: latest summary, boundary, pins."""
    values = state.get(strategy)
    return SummaryState(
        latest=state.store.memory.latest_summary(state.session_id, strategy),
        boundary=int(values.get("boundary_turn", 0)),
        behind=values.get("behind") or None,
        pins=pins.parse_pins(values.get(pins.PINNED_KEY)),
        unpinned=[str(u) for u in values.get(pins.UNPINNED_KEY, [])],
        released=int(values.get("released", 0)),
    )


def moved(now: SummaryState, then: SummaryState) -> bool:
    """Whether another process stored a summary since `then` was read."""
    version = now.latest.version if now.latest else 0
    return (now.boundary, version) != (then.boundary, then.latest.version if then.latest else 0)
