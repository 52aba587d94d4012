"""Finding a session's turn for inspect: the recorded turn, or the history's when none was
recorded (imported, forked); who said it and when."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatmem.store import SessionRecord, Store, TurnRecord


@dataclass(frozen=True)
class HistoryTurn:
    """A turn the history holds but no recorded turn does (imported or forked)."""

    number: int
    input: str
    said_at: str
    """When its input was stored as said."""
    user_message_id: int | None = None


def speaker_of_turn(store: Store, session: SessionRecord, message_id: int | None) -> str | None:
    """Who of a group chat said the message `message_id` (typed, as the request named them)."""
    if message_id is None:
        return None
    return store.history.speakers(session.id, [message_id]).get(message_id)


def turn_or_history(store: Store, session: SessionRecord,
                     number: int | None) -> TurnRecord | HistoryTurn:
    """The turn recorded at the conversation's turn `number` (default: the last recorded)
    or, for an imported or forked turn (its input is in the history, its context never
    was), the history's; NotFound if the history lacks it too. One numbering: the
    history's, as `sessions show`, fork --at-turn and search number turns."""
    from chatmem.errors import NoSuchTurn, NotFound

    try:
        if number is None:
            return store.turns.turn(session.id, shown=True)
        return store.turns.at_turn(session.id, number, shown=True)
    except NotFound:
        held = store.history.turn_count(session.id)
        at = held if number is None else number
        if at > held:
            # Past the last turn: how many there are, not only that this one is missing.
            raise NoSuchTurn(session.name, at, held) from None
        said = ([m for m in store.history.messages(session.id, at, at)
                 if m.role == "user"] if at > 0 else [])
        if not said:
            raise
        return HistoryTurn(at, said[0].content, said[0].created_at, said[0].id)


def turn_said_at(store: Store, turn: TurnRecord, zone: tzinfo) -> datetime | None:
    """When `turn`'s input was said: its stored user message's time (a replayed turn's is
    the transcript's), else (failed, cancelled, replaced since) when the turn was recorded."""
    said = [m.created_at for m in store.history.messages(turn.session_id, turn.turn, turn.turn)
            if m.id == turn.user_message_id]
    return time_or_none(said[0] if said else turn.created_at, zone)


def time_or_none(text: str, zone: tzinfo) -> datetime | None:
    """A stored time in the user's `zone`, a date alone that date there (None: unreadable
    or outside the calendar's zones; the newest message's is read instead)."""
    from chatmem.timestamps import local_moment

    return local_moment(text, zone)


def history_before(turn: TurnRecord) -> int:
    """How many history turns existed when `turn` was sent (a failed one: the turn it was
    attempted as, less one)."""
    return turn.turn - 1
