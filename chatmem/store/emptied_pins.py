"""Drift-guard pins a purge leaves with nothing of their own: dropped, not kept as a marker.

A summary strategy keeps its pins in its strategy state (chatmem.memory.pins: a list of
[text, summary version, pin id, turn, quote, ...] under PINNED_KEY) and sends each one in
the facts part of every turn. A pin whose whole text a purge erased would be sent as a bare
`[forgotten]`, as a fact would (RedactionTables deletes those): it goes, and the pins beside
it keep their ids, as `sessions reset-state pins` keeps them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from chatmem.store.rewritten_keys import PINNED_KEY, is_own_state_key
from chatmem.store.stored_values import json_text


def drop_emptied_pins(updates: dict[tuple[Any, ...], str],
                      emptied: Callable[[str], bool]) -> list[str]:
    """Take the pins whose rewritten text is `emptied` out of the planned strategy-state
    `updates` ((table, column, session id, strategy, key) → new JSON text); their ids
    (`p3`, or "" for a pin stored before pins had ids)."""
    dropped: list[str] = []
    for row, new in updates.items():
        if row[:2] != ("strategy_state", "value") or row[4] != PINNED_KEY \
                or not is_own_state_key(row[3], PINNED_KEY):
            continue
        try:
            pins = json.loads(new)
        except ValueError:
            continue
        if not isinstance(pins, list):
            continue
        gone = [p for p in pins if isinstance(p, list) and p and isinstance(p[0], str)
                and emptied(p[0])]
        if gone:
            updates[row] = json_text([p for p in pins if p not in gone])
            dropped += [f"p{p[2]}" if len(p) > 2 and isinstance(p[2], int) else ""
                        for p in gone]
    return dropped
