"""`chatmem sessions reset-state`: the owner's way out of a strategy state row chatmem cannot
read (edited by hand, or by a write grantee's SQL), which otherwise stops every turn of the
session under that strategy. Only derived memory goes: the turns, messages and facts stay,
and the strategy builds its state again from the turns, as after a fork that could not copy
it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem.errors import NotFound, UsageError

if TYPE_CHECKING:
    from chatmem.app.workspace import Workspace
    from chatmem.store import Store


@dataclass(frozen=True)
class StateReset:
    session: str
    strategy: str
    rows: int
    """State values dropped."""
    summaries: int
    """Summary versions dropped (made again from the turns)."""
    rebuilt: bool = False
    """The state was built again at once from every turn (chatmem's own notes, which the
    strategies never build again from the start), not on the next turn."""


def reset_state(workspace: Workspace, session: str, strategy: str) -> StateReset:
    """Drop `strategy`'s state and summary versions in the user's own `session`, in one
    transaction. What the user decided stays when it can be read (the details they unpinned:
    the drift guard does not pin them again); the session's pin id counter ("pins") is set
    past every id the session's summary versions can have given out, never back to 0 (an id
    is never given out twice). The secret guard's note of the turns that said something
    sensitive ("sensitive") is made again at once from every turn: a fold reads only turns
    past its summary, so a secret said before would be forgotten and go into summaries."""
    from chatmem.memory.pins import COUNTER, UNPINNED_KEY
    from chatmem.memory.sensitive_turns import SENSITIVE_KEY, said_in_history
    from chatmem.store.state_coverage import SPEAKERS_OWNER

    if strategy == SPEAKERS_OWNER:
        # Who said what in a group chat is no state a strategy builds again: it would be lost.
        raise UsageError(f"{SPEAKERS_OWNER!r} holds who said a group chat's messages, not a"
                         " strategy's state: nothing builds it again, so it is not reset")
    store = workspace.store
    record = store.sessions.session(session)
    store.sessions.check_session_owned(record.id, "reset the memory state of")
    with store.write():
        # The last pin id every writer gave out (a write share's grantee's own counter goes
        # with the reset on PostgreSQL): none is given to another detail.
        given = (store.memory.counted_elsewhere(record.id, COUNTER, "last")
                 if strategy == COUNTER else 0)
        unpinned = [row.value for row in store.memory.strategy_state_values(UNPINNED_KEY, record.id)
                    if row.strategy == strategy and isinstance(row.value, list)]
        rows, summaries = store.memory.reset_strategy_state(record.id, strategy)
        if not rows and not summaries:
            raise NotFound(f"session {session!r} holds no state of strategy {strategy!r}"
                           f"{_way_on(strategy)}")
        if unpinned:
            store.memory.set_strategy_state(record.id, strategy, {
                UNPINNED_KEY: [u for u in unpinned[0] if isinstance(u, str)]}, covers_turn=0)
            rows -= 1
        if strategy == COUNTER:
            store.memory.set_strategy_state(record.id, COUNTER, {
                "last": max(given, _pin_ids_given(store, record.id))}, covers_turn=0)
        if strategy == SENSITIVE_KEY:
            # Covering no turn, as `sensitive_turns.remember` writes it.
            store.memory.set_strategy_state(record.id, SENSITIVE_KEY, {
                "turns": said_in_history(store.history, record.id)}, covers_turn=0)
    return StateReset(session, strategy, rows, summaries,
                      rebuilt=strategy in (COUNTER, SENSITIVE_KEY))


def _way_on(strategy: str) -> str:
    """`reset-state S jiyi:k=1` said only that no state of 'jiyi:k=1' was held: a state is
    kept under the strategy's name alone, and a combination's under each part's."""
    name = strategy.partition(":")[0].strip()
    if "+" in name or "＋" in name:
        parts = [p.strip() for p in name.replace("＋", "+").split("+")]
        return f" (a combination's parts keep their states apart: reset one, e.g. {parts[0]})"
    if name != strategy:
        return f" (a state has no parameters: name the strategy alone, {name})"
    return " (the error that led here names the strategy)"


def _pin_ids_given(store: Store, session_id: int) -> int:
    """At least the last pin id the session gave out: its held pins' ids, and the details
    its summary versions dropped (each fold gives an id to no more pins than it dropped
    details), so an id unpinned or released is not given to another detail."""
    from chatmem.memory.pins import pinned_facts

    held = max((p.pin_id or 0 for p in pinned_facts(store.memory, session_id)), default=0)
    dropped = sum(len(s.dropped_anchors) for s in store.memory.summaries(session_id))
    return max(held, dropped)
