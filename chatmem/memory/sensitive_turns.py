"""Which turns of a session said something sensitive: what the secret guard re-reads.

A secret found in turn 12 must stay masked when the assistant repeats it in turn
40, long after turn 12 was summarized. The session remembers *where* secrets were
said (turn numbers, in the strategy state under SENSITIVE_KEY), never the secrets:
a guard for a new batch of turns re-reads those turns, and the turn just before
the batch (a bare value may answer its label), and learns their values again. So
nothing derived holds a copy of a secret, and a turn whose text is erased no
longer teaches the guard anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from chatmem.memory.history_view import HistoryTurn
from chatmem.privacy.secret_guard import SecretGuard

if TYPE_CHECKING:
    from chatmem.memory.state import SessionState
    from chatmem.store.protocols import HistoryRepository

SENSITIVE_KEY = "sensitive"
"""Strategy-state namespace shared by every strategy that feeds a helper model."""
READ_PAGE_TURNS = 32


def guard_for(
    state: SessionState, turns: Sequence[HistoryTurn]
) -> tuple[SecretGuard, list[str]]:
    """A guard that knows what earlier turns found and has read `turns`, in order, and
    the text of each message of `turns` as a helper model may see it."""
    guard = SecretGuard()
    first = turns[0].number if turns else 0
    before: list[str] = []
    if first:
        # Each turn that said a secret, with the turn before it (a bare value answers a
        # label there), and the turn just before the batch.
        wanted_turns = {n for t in _said_in(state) for n in (t - 1, t)} | {first - 1}
        earlier = sorted(n for n in wanted_turns if 0 < n < first)
        last_read = 0
        for start in range(0, len(earlier), READ_PAGE_TURNS):
            page = earlier[start:start + READ_PAGE_TURNS]
            # The page's turns alone: a range from a secret of turn 3 to the turn before a
            # batch at turn 3,000 read the whole history again for every batch.
            records = state.store.history.messages_in_turns(state.session_id, page)
            said: dict[int, list[str]] = {}
            for r in records:
                said.setdefault(r.turn, []).append(r.content)
            for number in page:
                # Turns far apart are read apart: turn 3 read right after turn 1 looked
                # like the answer to turn 1's label ("手机号是…" then "车牌号是沪A·12345").
                texts = said.get(number, [])
                guard.read(texts, before if number == last_read + 1 else ())
                before, last_read = texts, number
        if last_read != first - 1:
            before = []
    return guard, guard.read([m.content for t in turns for m in t.messages], before)


def remember(state: SessionState, guard: SecretGuard, turns: Sequence[HistoryTurn]) -> None:
    """Note the turns of `turns` that hold something the guard masks."""
    if not turns:
        return
    said = {t.number for t in turns if any(guard.holds(m.content) for m in t.messages)}
    if said <= _said_in(state):
        return
    # Read again under the write lock and extended there: a note another process wrote
    # since (a chat and a catch-up folding at once) is kept, not overwritten by this one.
    with state.store.write():
        known = _said_in(state)
        if not said <= known:
            # Covering no turn: the guard re-reads the listed turns as the history holds
            # them now, so a fork or a replaced turn makes it read one more turn at worst.
            state.set_covering(SENSITIVE_KEY, 0, turns=sorted(known | said))


def said_in_history(history: HistoryRepository, session_id: int) -> list[int]:
    """Every turn of the session that holds something the guard masks, read from the first
    turn on: what `remember` noted, made again when that note is lost (`sessions
    reset-state S sensitive`). Folds read only turns past their boundary, so a note built
    lazily would forget a secret said before it for good. Read a page at a time, twice (a
    value learnt late is noted in the earlier turns that said it too)."""
    guard = SecretGuard()
    last = history.turn_count(session_id)
    before: list[str] = []
    for first in range(1, last + 1, READ_PAGE_TURNS):
        texts = [r.content for r in history.messages(
            session_id, first, min(last, first + READ_PAGE_TURNS - 1))]
        guard.read(texts, before)
        before = texts[-2:]
    said: set[int] = set()
    for first in range(1, last + 1, READ_PAGE_TURNS):
        said |= {r.turn for r in history.messages(
            session_id, first, min(last, first + READ_PAGE_TURNS - 1)) if guard.holds(r.content)}
    return sorted(said)


def _said_in(state: SessionState) -> set[int]:
    stored = state.get(SENSITIVE_KEY).get("turns", [])
    return {int(t) for t in stored if isinstance(t, int)} if isinstance(stored, list) else set()
