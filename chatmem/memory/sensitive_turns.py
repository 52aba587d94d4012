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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from chatmem.memory.history_view import HistoryTurn
from chatmem.privacy.secret_guard import SecretGuard

if TYPE_CHECKING:
    from chatmem.memory.state import SessionState
    from chatmem.store.protocols import HistoryRepository

SENSITIVE_KEY = "sensitive"
"""Strategy-state namespace shared by every strategy that feeds a helper model."""
READ_PAGE_TURNS = 32


@dataclass(frozen=True)
class Note:
    """The turns the session's note lists (`noted`), as a fold reads it once."""

    distrusted: bool
    """The stored note reads as absent: another role wrote a row of it (p025)."""
    turns: frozenset[int]


def noted(state: SessionState) -> Note:
    """The note, read once for a fold's guard_for and remember: each read it again, and
    on PostgreSQL asked again whether it was distrusted, up to five times a fold (and read
    the whole history twice while it was)."""
    distrusted = _distrusted(state)
    return Note(distrusted, frozenset(_said_in(state, distrusted)))


def guard_for(
    state: SessionState, turns: Sequence[HistoryTurn], note: Note | None = None
) -> tuple[SecretGuard, list[str]]:
    """A guard that knows what earlier turns found and has read `turns`, in order, and
    the text of each message of `turns` as a helper model may see it. `note`: `noted`,
    when the caller read it already."""
    first = turns[0].number if turns else 0
    guard, before = SecretGuard(), list[str]()
    if first:
        # Each turn that said a secret, with the turn before it (a bare value answers a
        # label there), and the turn just before the batch.
        known = (note or noted(state)).turns
        said = sorted(n for n in {n for t in known for n in (t - 1, t)} if 0 < n < first)
        reading = _earlier_read(state, said) if said else _Reading(None)
        guard, before = reading.guard.copy(), reading.before
        if first - 1 not in said and first > 1:
            before = _read(state, guard, [first - 1], before, reading.last_read)[0]
    return guard, guard.read([m.content for t in turns for m in t.messages], before)


@dataclass
class _Reading:
    """A guard that has read the turns `turns` that said a secret (and those before them),
    in order: the next fold's guard reads only the turns said past them, not all again (a
    catch-up of many turns with secrets re-read them all at each batch)."""

    erasures: int | None
    """The session's erasure count before any turn was read: any other, the text read may
    be gone or replaced, and the reading is not used again."""
    turns: list[int] = field(default_factory=list)
    guard: SecretGuard = field(default_factory=SecretGuard)
    before: list[str] = field(default_factory=list)
    """The texts of the last turn read."""
    last_read: int = 0


_READINGS = "sensitive_readings"
_READINGS_KEPT = 4
"""Readings kept a session: one for each strategy of a combination, behind each other."""


def _earlier_read(state: SessionState, said: list[int]) -> _Reading:
    """A guard that has read the turns `said`, in order, each after the turn before it when
    that was read just before: extended from a reading kept for a prefix of them."""
    erasures = state.erasures()  # before any text is read: a purge after it drops the reading
    kept: list[_Reading] = [r for r in state.caches.get(_READINGS, [])
                            if r.erasures == erasures]
    starts = [r for r in kept if said[:len(r.turns)] == r.turns]
    reading = max(starts, key=lambda r: len(r.turns)) if starts else _Reading(erasures)
    if reading.turns != said:
        reading.before, reading.last_read = _read(
            state, reading.guard, said[len(reading.turns):], reading.before, reading.last_read)
        reading.turns = list(said)
    state.caches[_READINGS] = [reading, *(r for r in kept if r is not reading)][
        :_READINGS_KEPT]
    return reading


def _read(state: SessionState, guard: SecretGuard, numbers: list[int], before: list[str],
          last_read: int) -> tuple[list[str], int]:
    """`guard` having read the turns `numbers` after the turn `last_read` (whose texts are
    `before`): the texts of the last one read and its number."""
    for start in range(0, len(numbers), READ_PAGE_TURNS):
        page = numbers[start:start + READ_PAGE_TURNS]
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
    return before, last_read


def remember(state: SessionState, guard: SecretGuard, turns: Sequence[HistoryTurn],
             note: Note | None = None) -> None:
    """Note the turns of `turns` that hold something the guard masks. A note that reads as
    absent because another role wrote it (`_said_in`) is made again, whole, as the reader's.
    `note`: `noted`, when the caller read it already (before this fold's guard read)."""
    if not turns:
        return
    said = {t.number for t in turns if any(guard.holds(m.content) for m in t.messages)}
    note = note or noted(state)
    if not note.distrusted and said <= note.turns:
        return
    # Read again under the write lock and extended there: a note another process wrote
    # since (a chat and a catch-up folding at once) is kept, not overwritten by this one.
    with state.store.write():
        still = _distrusted(state)
        known = set(note.turns) if note.distrusted and still else _said_in(state, still)
        if still or not said <= known:
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


def _distrusted(state: SessionState) -> bool:
    return state.store.memory.state_distrusted(state.session_id, SENSITIVE_KEY)


def _said_in(state: SessionState, distrusted: bool) -> set[int]:
    """The turns the note lists. On PostgreSQL a note a role the reader does not trust wrote
    (a write grantee's turn noting his secret there, or his SQL) reads as absent (p025), and
    the guard then forgot every secret said before its batch: a later bare repeat reached
    the owner's helper model. So such a note (`distrusted`) is read from the history."""
    if distrusted:
        return set(said_in_history(state.store.history, state.session_id))
    stored = state.get(SENSITIVE_KEY).get("turns", [])
    return {int(t) for t in stored if isinstance(t, int)} if isinstance(stored, list) else set()
