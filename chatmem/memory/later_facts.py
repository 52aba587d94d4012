"""What an extraction reading turn N must leave alone: this session's facts set or forgotten
after turn N.

The extractor reads turns it has not read yet, and usually that is the turn just said. A
catch-up reads older ones: after `sessions import` or a fork (the extractor's state is not
carried, so it starts from turn 1), or after batches that failed. Turn 1's "I live in
Paris" must not then undo a `/remember city: Lyon` or turn 3's "I moved to Lyon", nor bring
back a fact the user forgot. Only what the store keeps is used: a fact's source turn when a
turn of this session set it, else the time it was set (`updated_at`) against the time the
turn was said; a forgotten fact's `deleted_at`.

Facts of other sessions (a profile fact stated elsewhere, or seeded by a replay) are left as
before: a turn of this session may replace them whenever it was said.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from chatmem.memory.fact_keys import same_key
from chatmem.memory.history_view import HistoryTurn
from chatmem.memory.state import SessionState
from chatmem.store import FactRecord
from chatmem.timestamps import parse_time


class LaterFacts:
    """This session's facts as they stood before a batch was applied, and when each of the
    batch's turns was said."""

    def __init__(self, state: SessionState, turns: Sequence[HistoryTurn]) -> None:
        self._session_id = state.session_id
        self._said: dict[int, datetime] = {}
        if turns:
            for record in state.store.history.messages(
                    state.session_id, turns[0].number, turns[-1].number):
                said = _time(record.created_at) if record.role == "user" else None
                if said is not None:
                    self._said.setdefault(record.turn, said)
        # Read once, before the batch writes: a key the batch itself retracts at turn 3
        # may be set again by its turn 5.
        facts = state.store.facts.facts(
            user=state.user, session_id=state.session_id, include_deleted=True)
        self._forgotten = [f for f in facts if f.deleted_at is not None and self._ours(f)]
        # The message each live fact's value came from before the batch: on PostgreSQL the
        # owner reads a write grantee's turns again (his marker is his, not trusted for her
        # memory), and his "我叫鲍勃。My name is Bob." set 鲍勃 then Bob over his own Bob,
        # adding both to the history a second time.
        self._read_from = {f.id: f.source_message_id for f in facts
                           if f.deleted_at is None and self._ours(f)}

    def set_after(self, fact: FactRecord, turn: int) -> bool:
        """Whether `fact`'s current value was set after `turn` was said: by a later turn of
        this session, or here by the user (/remember, facts teach) after it."""
        if not self._ours(fact):
            return False
        if fact.source_turn is not None and fact.source_session_id in (None, self._session_id):
            return fact.source_turn > turn
        return _after(fact.updated_at, self._said.get(turn))

    def already_read(self, fact: FactRecord, message_id: int | None) -> bool:
        """Whether `fact`'s value, before the batch, came from `message_id` already: that
        message was read into it, so reading it again changes nothing."""
        return message_id is not None and self._read_from.get(fact.id) == message_id

    def forgotten_after(self, keys: Sequence[str], turn: int,
                        speaker: str | None = None) -> bool:
        """Whether one of `keys` was forgotten in this session after `turn` was said, of
        the values `speaker` (a group chat's member; None: the user) stated."""
        said = self._said.get(turn)
        return any(_after(f.deleted_at, said) for f in self._forgotten
                   if f.speaker == speaker and any(same_key(f.key, key) for key in keys))

    def _ours(self, fact: FactRecord) -> bool:
        return self._session_id in (fact.session_id, fact.source_session_id)


def _after(stamp: str | None, said: datetime | None) -> bool:
    moment = _time(stamp) if stamp is not None else None
    return moment is not None and said is not None and moment > said


def _time(stamp: str) -> datetime | None:
    try:
        return parse_time(stamp)
    except ValueError:
        return None
