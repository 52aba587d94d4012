"""What a session's stored strategy state covers: the last turn it was derived from.

Forking at a turn copies a state only when it covers no later turn, and replacing the
last turn (/retry, /edit-last, serve's regenerate) is refused once a state covers it.
chatmem records the turn itself when a strategy's update stores its state (the history's
last turn then, or the narrower turn a built-in strategy names), under COVERS_KEY beside
the strategy's own keys; no plugin has to say it.
"""

from __future__ import annotations

import json
from typing import Any

from chatmem.store.connection import fetch_rows, fetch_value
from chatmem.store.postgres_writers import trusted_memory_on
from chatmem.store.writer_state import kept_role

FACTS_OWNER = "facts"
"""The fact extractor's state owner (chatmem.memory.extraction.STATE_KEY): it owns
extracted facts."""
SPEAKERS_OWNER = "@speakers"
"""The owner of a group chat's speakers of messages no turn of the session stored as its
input (a client's earlier named messages, a fork's copies): message position → the name
the request gave. Not derived state: `@` is in no strategy's name, and a fork copies the
speakers of the messages it copies (positions are kept), never the rest.
A turn's own input keeps its speaker in the turn's context ("speaker")."""
COVERS_KEY = "@covers_turn"
"""The state key of the turn a state covers: `@` is in no Python name, so no
`env.state.set(name, **values)` of a plugin writes it, and `strategy_state()` leaves it out."""


def state_coverage(db: Any, session_id: int) -> dict[str, int]:
    """Owner (a strategy name, or a shared namespace) → the last turn its stored state in
    the session covers (0: none; bookkeeping such as a pin counter)."""
    # On PostgreSQL a strategy's state another role wrote is not this reader's memory (p025:
    # read as absent, rebuilt from the turns), so it covers nothing of the reader's: a write
    # share's grantee's planted `@covers_turn` refused the owner's /retry.
    trusted = trusted_memory_on(getattr(db, "kind", "sqlite"), "s", "s.strategy")
    rows = fetch_rows(db, "SELECT strategy, key, value FROM strategy_state s"
                      f" WHERE session_id = ? AND strategy <> ?{trusted}",
                      [session_id, SPEAKERS_OWNER])
    states: dict[str, dict[str, Any]] = {}
    for r in rows:
        values = states.setdefault(r["strategy"], {})
        try:
            values[r["key"]] = json.loads(r["value"] or "null")
        except (ValueError, RecursionError):
            # A row written outside chatmem (by hand, or a write share's grantee by SQL):
            # what it covers is unknown, read as for a state stored before coverage was
            # recorded (_covers), never an error that stops /retry or a fork.
            continue
    unknown = [owner for owner, values in states.items() if COVERS_KEY not in values]
    ran: set[str] = set()
    last = 0
    if unknown:
        ran = {name for r in fetch_rows(
            db, "SELECT DISTINCT strategy FROM turns WHERE session_id = ?", [session_id])
            for name in str(r["strategy"]).split("+")}
        last = int(fetch_value(db, "SELECT coalesce(max(turn), 0) FROM messages"
                               " WHERE session_id = ?", [session_id]))
    covers: dict[str, int] = {}
    for owner, values in states.items():
        # A write share's grantee's own state (writer_state) covers what it covers as its
        # owner's, as hers does: the later of the two, which neither /retry nor a fork passes.
        name = kept_role(owner)[0]
        covers[name] = max(covers.get(name, 0), _covers(owner, values, ran, last))
    return covers


def _covers(owner: str, values: dict[str, Any], ran: set[str], last: int) -> int:
    recorded = values.get(COVERS_KEY)
    if isinstance(recorded, int):
        return recorded
    # Stored before chatmem recorded coverage. chatmem's own strategies then kept the last
    # turn folded in as *_turn (boundary_turn, done_turn); any other state of a strategy
    # that ran turns here may hold something of every turn; a namespace no strategy is
    # named after (the pin counter, the secret guard's turn list) derives nothing to redo.
    turns = [int(v) for k, v in values.items()
             if k.endswith("_turn") and isinstance(v, int | float)]
    if turns:
        return max(turns)
    return last if owner in ran else 0
