"""When an input is said, as its context reads it (`ContextRequest.said_at`): the day recall's
day lines count from, and the clock the times it names ("yesterday", "上周五") are read on.

The first message of a new day is read on that day, not on the day of the message before it;
a replay reads each input on the transcript's clock, so it gives what it gave before.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from enum import Enum
from typing import TYPE_CHECKING

from chatmem.timestamps import local_moment, parse_time

if TYPE_CHECKING:
    from chatmem.store.protocols import TurnStore


class Said(Enum):
    """When an input is said, other than at a time given."""

    NOW = "now"
    """On the store's clock, which stamps it too: a turn, ask, serve, MCP, inspect --next."""
    AS_NEWEST = "as newest"
    """When the newest stored message was (none dated: now): a transcript's input without a
    time, an eval probe."""


SaidAt = datetime | Said


def said_time(said: SaidAt, store: TurnStore, session_id: int, zone: tzinfo) -> datetime:
    """`said` as a time in the user's `zone`, always one (a strategy reads
    `request.said_at` without checking, and its `.date()` is the day `history.said_at`
    dates messages by): as newest, the session's newest stored message's time (as recall
    reads it), else, with none dated, the store's clock."""
    if isinstance(said, datetime):
        return said.astimezone(zone)
    if said is Said.AS_NEWEST:
        last = store.recall.newest_message(session_id)
        moment = None if last is None else local_moment(last.created_at, zone)
        if moment is not None:
            return moment
    return parse_time(store.now()).astimezone(zone)


def transcript_time(ts: str | None, zone: tzinfo) -> SaidAt:
    """When a transcript's message was said: its `ts` in the user's `zone` (a date alone is
    that date there), else as the newest message stored."""
    # The reader refuses a ts that does not read or lies at the calendar's edge; a message
    # built elsewhere with one is read as untimed.
    moment = local_moment(ts, zone)
    return Said.AS_NEWEST if moment is None else moment
