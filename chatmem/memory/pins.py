"""Pinned details: drift-guard anchors a summary dropped, listed and forgotten like facts.

The summary strategies keep them in their strategy state ("pinned": a list
of [text, summary version, pin id]) and send them verbatim in a `facts`
part. This module lists them for /facts and `chatmem facts list` (id `p3`,
source `summary-buffer v2 (pinned)`) and unpins them for /forget and
`chatmem facts forget`. An unpinned detail is remembered as such, so the
drift guard does not pin it again when a later summary drops it once more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chatmem.memory.anchors import present

if TYPE_CHECKING:
    from chatmem.store import Store

PINNED_KEY = "pinned"
UNPINNED_KEY = "unpinned"
COUNTER = "pins"
"""Strategy-state namespace of the session's last pin id, shared by every summary strategy,
so that `p3` names one pin in a session even when two summary strategies have pins."""
_REF = re.compile(r"^[pP](\d+)$")


@dataclass(frozen=True)
class PinnedFact:
    session_id: int
    strategy: str
    text: str
    version: int
    pin_id: int | None
    """None only for pins stored before pins had ids; they are named by their text."""

    @property
    def ref(self) -> str:
        return f"p{self.pin_id}" if self.pin_id is not None else ""

    @property
    def source(self) -> str:
        return f"{self.strategy} v{self.version} (pinned)"


def parse_pinned(value: Any) -> list[tuple[str, int, int | None]]:
    """The stored pin list as (text, version, pin id) triples."""
    out = []
    for item in value or []:
        pin_id = int(item[2]) if len(item) > 2 and item[2] is not None else None
        out.append((str(item[0]), int(item[1]), pin_id))
    return out


def allocate_ids(store: Store, session_id: int, count: int) -> list[int]:
    """Fresh pin ids for this session; an id is never given out twice, even after an unpin."""
    if count <= 0:
        return []
    last = int(store.strategy_state(session_id, COUNTER).get("last", 0))
    store.set_strategy_state(session_id, COUNTER, {"last": last + count})
    return list(range(last + 1, last + count + 1))


def is_unpinned(unpinned: Iterable[str], text: str) -> bool:
    """Whether the user unpinned this text (compared like the drift guard compares anchors)."""
    return any(present(u, text) and present(text, u) for u in unpinned)


def pinned_facts(store: Store, session_id: int | None = None) -> list[PinnedFact]:
    """The pins of one session, or of every session, by session, strategy and pin order."""
    return [
        PinnedFact(sid, strategy, text, version, pin_id)
        for sid, strategy, value in store.strategy_state_values(PINNED_KEY, session_id)
        for text, version, pin_id in parse_pinned(value)
    ]


def find_pins(pins: Sequence[PinnedFact], ref: str) -> list[PinnedFact]:
    """The pins `ref` names: an id like p3, or the pinned text (case and spacing aside)."""
    ref = ref.strip()
    by_id = _REF.match(ref)
    if by_id:
        return [p for p in pins if p.pin_id == int(by_id.group(1))]
    return [p for p in pins if is_unpinned([ref], p.text)]


def unpin(store: Store, pin: PinnedFact) -> None:
    """Stop sending a pin, and keep the drift guard from pinning the same text again."""
    values = store.strategy_state(pin.session_id, pin.strategy)
    kept = [[text, version, pin_id]
            for text, version, pin_id in parse_pinned(values.get(PINNED_KEY))
            if text != pin.text]
    unpinned = [str(u) for u in values.get(UNPINNED_KEY, [])]
    if not is_unpinned(unpinned, pin.text):
        unpinned.append(pin.text)
    store.set_strategy_state(pin.session_id, pin.strategy,
                             {PINNED_KEY: kept, UNPINNED_KEY: unpinned})


def pinned_at(store: Store, pins: Sequence[PinnedFact]) -> dict[PinnedFact, str]:
    """Pin → when the summary version that dropped it was made (a pin's age)."""
    made: dict[tuple[int, str, int], str] = {}
    for session_id, strategy in dict.fromkeys((p.session_id, p.strategy) for p in pins):
        for record in store.summaries(session_id, strategy):
            made[(session_id, strategy, record.version)] = record.created_at
    return {p: made[key] for p in pins if (key := (p.session_id, p.strategy, p.version)) in made}
