"""A recorded turn read to be shown (inspect, the REPL's /inspect, explain_turn): its stored
context and rendered pieces checked, and their expansion bounded, before they are expanded.

Only showing checks. Running a turn, /retry, replay, export and eval read a turn as it is
stored (running and /retry without expanding its runs: `contexts.inline`): a write-share
grantee may store a turn with a context of his own (p018 lets him), and refusing it on
every read refused the owner's next `ask`. What is shown is what a
hand-edited file or another role's SQL can blow up: a run to position 10**18 expanded for
ever, 20,000 runs of the whole history took 8 s (3 GB with one long message), a context
without its parts was a traceback. Each is one StoredTurnNotShown naming the turn.

The bounds are what chatmem itself writes. Messages are never deleted one by one (a session
goes whole), and `contexts.compact` makes a run only of stored rows: every run of a context
or of a rendered prompt ends at or before the session's last position (PostgreSQL's p020
holds a grantee's rendered runs to that too). A context holds at most one part of each kind
(`memory.guards.wrong_context`), and chatmem's strategies send a stored message at most once
in a part: its runs name at most len(PART_ORDER) times the session's positions. And
`rendered.compact` references each message the context sent at most once, in the order
sent: a rendered prompt's runs name no more positions than its context's runs do.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from chatmem.errors import StoredTurnNotShown, StoreError, TurnPart
from chatmem.store import contexts, rendered
from chatmem.store.backend import Statements
from chatmem.store.stored_values import stored_json

PART_KINDS = 7
"""len(memory.context.PART_ORDER), written out: the store does not import memory."""
DEEPEST = 32
"""How deep a shown context's JSON may nest. chatmem writes a dozen levels at most (a merged
reason of recalled runs); 600 lists around a reason's run read back as JSON, then wording
the reason recursed past Python's limit: a traceback in `inspect`."""


def checked(db: Statements, session_id: int, address: str, request: int, turn: int,
            context: Any, pieces: str | None) -> None:
    """Raise StoredTurnNotShown unless request `request`'s (turn `turn`'s) stored `context`
    (parsed) and rendered `pieces` (the column's text) are as chatmem writes them, within
    its bounds."""
    def refused(part: TurnPart, *, oversized: bool = False) -> StoredTurnNotShown:
        return StoredTurnNotShown(address, request, turn, part, oversized=oversized)

    if context != {} and not _is_context(context):
        raise refused(TurnPart.CONTEXT)
    last = int(db.execute("SELECT coalesce(max(position), 0) FROM messages"
                          " WHERE session_id = ?", [session_id]).fetchone()[0])
    sent = _named(_context_runs(context), last)
    if sent is None or sent > PART_KINDS * last:
        raise refused(TurnPart.CONTEXT, oversized=sent is not None)
    if not pieces:
        return
    what = f"turn {request}: rendered prompt"
    try:
        read = rendered.readable_pieces(stored_json(pieces, what), what)
    except StoreError:
        raise refused(TurnPart.RENDERED_PROMPT) from None
    named = _named(((p["from"], p["to"]) for p in read if isinstance(p, dict)), last)
    if named is None or named > sent:
        raise refused(TurnPart.RENDERED_PROMPT, oversized=named is not None)


def _named(runs: Iterator[tuple[int, int]] | Any, last: int) -> int | None:
    """How many positions `runs` name in all; None when one ends past `last` (never
    written by chatmem: see the module doc)."""
    total = 0
    for first, to in runs:
        if to > last:
            return None
        total += to - first + 1
    return total


def _context_runs(context: Mapping[str, Any]) -> Iterator[tuple[int, int]]:
    for part in context.get("parts", ()):
        for item in part["messages"]:
            if "role" not in item:
                yield item["from"], item["to"]


def _is_context(stored: Any) -> bool:
    """`stored` is a context as `contexts.compact` stores it (`Context.to_json`, its stored
    messages as runs of whole positions when `"format": 2`), or the full form files before
    m005 hold; a row another role or a hand wrote otherwise (no parts, a count as text)
    is not, and would be a KeyError or TypeError in reading it back to show."""
    return (isinstance(stored, dict) and isinstance(stored.get("parts"), list)
            and _shallow(stored)
            and stored.get("format", contexts.FORMAT) == contexts.FORMAT
            and _optional(stored, "budget", _whole_or_none)
            and _optional(stored, "priming", _whole) and _optional(stored, "tokens", _whole)
            and _optional(stored, "warnings", _notes) and _optional(stored, "dropped", _dropped)
            and _optional(stored, "recall", _rows)
            and all(_is_part(p, runs="format" in stored) for p in stored["parts"]))


def _shallow(value: Any) -> bool:
    """Whether `value` nests (lists and objects) no deeper than DEEPEST, walked without
    recursing, and no further than one level past it."""
    waiting = [(value, 1)]
    while waiting:
        item, depth = waiting.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > DEEPEST:
            return False
        waiting.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict)
                                                else item))
    return True


def _is_part(part: Any, *, runs: bool) -> bool:
    return (isinstance(part, dict) and isinstance(part.get("kind"), str)
            and isinstance(part.get("reason"), str | dict)
            and isinstance(part.get("messages"), list) and _optional(part, "tokens", _whole)
            and _optional(part, "fact_ids", lambda v: isinstance(v, list)
                          and all(_whole(i) for i in v))
            and all(_is_message(m) or (runs and _is_run(m)) for m in part["messages"]))


def _is_message(item: Any) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("role"), str)
            and isinstance(item.get("content"), str) and _whole(item.get("tokens"))
            and _optional(item, "id", _whole_or_none) and _optional(item, "turn", _whole_or_none)
            and _optional(item, "image", _image))


def _is_run(item: Any) -> bool:
    if not isinstance(item, dict) or "role" in item:
        return False
    first: Any = item.get("from")
    last: Any = item.get("to")
    return (_whole(first) and _whole(last) and 1 <= first <= last
            and ("said_on" not in item or (first == last and isinstance(item["said_on"], str)
                 and _whole(item.get("tokens")))))


def _image(value: Any) -> bool:
    return (isinstance(value, dict)
            and all(isinstance(value.get(k), str) for k in ("sha256", "mime", "rule"))
            and all(_whole(value.get(k)) for k in ("width", "height", "tokens")))


def _optional(values: Mapping[str, Any], key: str, check: Any) -> bool:
    return key not in values or bool(check(values[key]))


def _whole(value: Any) -> bool:
    return type(value) is int  # bool is an int to Python, never a count chatmem wrote


def _whole_or_none(value: Any) -> bool:
    return value is None or _whole(value)


def _notes(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(n, str) or (isinstance(n, dict) and isinstance(n.get("kind", ""), str))
        for n in value)


def _dropped(value: Any) -> bool:
    return value is None or isinstance(value, str) or _notes(value)


def _rows(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(r, dict) for r in value)
