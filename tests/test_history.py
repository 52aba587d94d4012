"""StoredHistory: a session's turns read lazily from the tail, counted without writing."""

from __future__ import annotations

import itertools
from typing import Any

from cached_counts import cached_counts
from registered import create_strategy

from chatmem.history import PAGE_TURNS, StoredHistory
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import Message
from chatmem.memory.message_counts import MessageCounts, sent_text
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
    # StoredHistory reads a page of turns with their counts (store.history.counted_messages).
    original = store.history.counted_messages

    def spy(session_id: int, first_turn: int, last_turn: int, tokenizer: str):
        reads.append((first_turn, last_turn))
        return original(session_id, first_turn, last_turn, tokenizer)

    monkeypatch.setattr(store.history, "counted_messages", spy)
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
    assert cached_counts(store, session_id, COUNTER.key) == {}
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


def test_said_at_gives_each_stored_message_its_time_in_the_zone_asked(store: Store) -> None:
    from datetime import date, datetime
    from zoneinfo import ZoneInfo

    session = store.sessions.create_session("timed", "window")
    store.history.import_messages(session.id, [
        {"role": "user", "content": "去了杭州", "ts": "2026-03-07T23:30:00+00:00"},
        {"role": "assistant", "content": "好", "ts": "2026-03-07"},
        {"role": "user", "content": "undated", "ts": "0001-01-01T00:00:00+00:00"}])
    history = StoredHistory(store, session.id, COUNTER)
    [turn_1, turn_2] = history.turns(1, 2)
    shanghai, new_york = ZoneInfo("Asia/Shanghai"), ZoneInfo("America/New_York")
    said = history.said_at(turn_1.messages + turn_2.messages, shanghai)
    question, answer, undated = (m.id for m in turn_1.messages + turn_2.messages)
    # 23:30 UTC is the next morning in Shanghai; a date alone is that date in any zone;
    # a time beyond the calendar's edge reads as undated and is left out.
    assert said[question] == datetime(2026, 3, 8, 7, 30, tzinfo=shanghai)
    assert said[answer].date() == date(2026, 3, 7)
    assert history.said_at([turn_2.messages[0]], new_york) == {} and undated not in said
    assert history.said_at(turn_1.messages, new_york)[answer].date() == date(2026, 3, 7)
    # Text not (yet) stored has no time.
    assert history.said_at([Message("user", "new", 3)], shanghai) == {}


def test_candidates_count_as_sent_once_each_whatever_is_stored(store: Store) -> None:
    # Rows as recall reads them: a stored count taken as it is, a reply's stored with its
    # reasoning or none stored counted as sent, once in this process however often read.
    rows = [(1, 11, 1, "user", "预算五千元", None, "2026-03-07"),
            (2, 12, 1, "assistant", "<think>先想想</think>好的", 40, "2026-03-07"),
            (3, 13, 2, "user", "ok", 7, "2026-03-07"),
            (4, 14, 2, "assistant", "Fine.", None, "2026-03-07"),
            (5, 15, 3, "system", "be brief", None, "2026-03-07"),
            (6, 16, 3, "assistant", "Sure.", 9, "2026-03-07")]
    tally = Tally()
    counts = MessageCounts(store, tally)  # type: ignore[arg-type]
    as_sent = [COUNTER.count_message("user", "预算五千元"),
               COUNTER.count_message("assistant", "好的"), 7,
               COUNTER.count_message("assistant", "Fine."),
               COUNTER.count_message("system", sent_text("system", "be brief")), 9]
    assert counts.tokens_of(rows) == as_sent and tally.calls == 4
    assert counts.tokens_of(rows[::-1]) == as_sent[::-1] and tally.calls == 4
