"""StoredHistory: a session's turns read lazily from the tail, counted without writing."""

from __future__ import annotations

import itertools
from typing import Any

from registered import create_strategy

from chatmem.history import PAGE_TURNS, StoredHistory
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import Message
from chatmem.memory.message_counts import MessageCounts
from chatmem.memory.state import SessionState
from chatmem.store import Store, TurnRecord
from chatmem.tokens import counter_for_model

COUNTER = counter_for_model(None, exact=True)


def filled(store: Store, turns: int, greeting: bool = False) -> int:
    session = store.sessions.create_session("h", "window")
    messages = [{"role": "assistant", "content": "欢迎！"}] if greeting else []
    for n in range(1, turns + 1):
        messages += [{"role": "user", "content": f"q{n}"},
                     {"role": "assistant", "content": f"a{n}"}]
    store.history.import_messages(session.id, messages)
    return session.id


def test_newest_first_walks_every_turn_back_across_pages(store: Store) -> None:
    total = PAGE_TURNS * 3 + 5
    history = StoredHistory(store, filled(store, total), COUNTER)
    assert history.turn_count() == total
    numbers = [t.number for t in history.newest_first()]
    assert numbers == list(range(total, 0, -1))
    newest = next(iter(history.newest_first()))
    assert [m.content for m in newest.messages] == [f"q{total}", f"a{total}"]
    assert [t.number for t in history.turns(3, 5)] == [3, 4, 5]
    assert history.turns(total, total + 10)[0].number == total


def spied_reads(store: Store, monkeypatch: Any) -> list[tuple[int, int | None]]:
    """The (first, last) turn of each history read from now on."""
    reads: list[tuple[int, int | None]] = []
    original = store.history.messages

    def spy(session_id: int, first_turn: int = 1, last_turn: int | None = None):
        reads.append((first_turn, last_turn))
        return original(session_id, first_turn, last_turn)

    monkeypatch.setattr(store.history, "messages", spy)
    return reads


def test_window_reads_only_the_tail(store: Store, monkeypatch) -> None:
    session_id = filled(store, 500)
    reads = spied_reads(store, monkeypatch)
    history = StoredHistory(store, session_id, COUNTER)
    request = ContextRequest(history=history, input=Message("user", "x", 5), counter=COUNTER,
                             state=SessionState(store, session_id))
    context = create_strategy("window", {"k": "3"}).build(request)
    # Three turns wanted, three read: no page of PAGE_TURNS, no second read to stop.
    assert reads == [(498, 500)]
    part = context.part("history")
    assert part is not None and [m.turn for m in part.messages][::2] == [498, 499, 500]


def test_retrieval_reads_only_its_recent_turn_and_then_more_on_demand(
    store: Store, monkeypatch: Any
) -> None:
    session_id = filled(store, 500)
    reads = spied_reads(store, monkeypatch)
    history = StoredHistory(store, session_id, COUNTER)
    request = ContextRequest(history=history, input=Message("user", "q7?", 5), counter=COUNTER,
                             state=SessionState(store, session_id))
    context = create_strategy("retrieval", {"mode": "bm25", "recent": "1"}).build(request)
    # One recent turn: one turn read (recall reads its candidates by position, not so).
    assert reads == [(500, 500)]
    part = context.part("history")
    assert part is not None and [m.content for m in part.messages] == ["q500", "a500"]
    # Wanting more than the first read held reads on, pages growing as before.
    newest = [t.number for t in itertools.islice(history.newest_first(2), 5)]
    assert newest == [500, 499, 498, 497, 496]
    assert reads[1:] == [(499, 500), (495, 498)]


class Tally:
    """COUNTER, counting the messages it is asked to count."""

    def __init__(self) -> None:
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(COUNTER, name)

    def count_message(self, role: str, content: str) -> int:
        self.calls += 1
        return COUNTER.count_message(role, content)


def test_missing_counts_are_computed_once_in_memory_and_never_written(store: Store) -> None:
    session_id = filled(store, 3)
    tally = Tally()
    counts = MessageCounts(store, tally)  # type: ignore[arg-type]
    first = StoredHistory(store, session_id, COUNTER, counts=counts).turns(1, 3)
    again = StoredHistory(store, session_id, COUNTER, counts=counts).turns(2, 3)
    assert again == first[1:]
    assert tally.calls == 6  # each message once, though read twice
    ids = [m.id for t in first for m in t.messages]
    assert store.history.cached_token_counts(ids, COUNTER.key) == {}
    assert first[0].messages[0].tokens == COUNTER.count_message("user", "q1")


def test_stored_counts_are_taken_as_they_are(store: Store) -> None:
    session = store.sessions.create_session("s", "window")
    store.turns.commit_turn(TurnRecord(session.id, "ok", "预算五千元", {}, "window", reply="好的",
                                       tokenizer=COUNTER.key), message_tokens=(11, 22))
    tally = Tally()
    history = StoredHistory(store, session.id, COUNTER,
                            counts=MessageCounts(store, tally))  # type: ignore[arg-type]
    [turn] = history.turns(1, 1)
    assert [m.tokens for m in turn.messages] == [11, 22] and tally.calls == 0


def test_a_leading_greeting_is_its_own_turn(store: Store) -> None:
    history = StoredHistory(store, filled(store, 2, greeting=True), COUNTER)
    first = history.turns(1, 1)[0]
    assert [m.role for m in first.messages] == ["assistant"]
    assert history.turn_count() == 3
