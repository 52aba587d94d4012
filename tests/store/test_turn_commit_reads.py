"""A turn's commit: its purge check and the read that numbers its messages are one statement."""

from __future__ import annotations

import pytest
from meter import metered

from chatmem.errors import SessionGone, StoreError, StoreFailure
from chatmem.store import Store, TurnRecord


def turn(session_id: int, text: str, reply: str = "ok") -> TurnRecord:
    return TurnRecord(session_id=session_id, status="ok", input=text, reply=reply,
                      context={"parts": []}, strategy="buffer")


def numbered(store: Store, session_id: int) -> list[tuple[str, int, int, bool]]:
    return [(content, turn, position, bool(superseded)) for content, turn, position, superseded
            in store.db.execute("SELECT content, turn, position, superseded FROM messages"
                                " WHERE session_id = ? ORDER BY position", [session_id])]


def test_the_purge_check_costs_a_commit_no_statement_of_its_own(store: Store) -> None:
    session = store.sessions.create_session("s", "buffer")
    store.turns.commit_turn(turn(session.id, "我们五月去杭州", "好的"))
    with metered(store) as unchecked:
        store.turns.commit_turn(turn(session.id, "budget 5,000 yuan"))
    seen = store.sessions.erasures(session.id)
    with metered(store) as checked:
        store.turns.commit_turn(turn(session.id, "预算五千元"), erasures=seen)
    assert checked.statements == unchecked.statements
    assert numbered(store, session.id) == [
        ("我们五月去杭州", 1, 1, False), ("好的", 1, 2, False),
        ("budget 5,000 yuan", 2, 3, False), ("ok", 2, 4, False),
        ("预算五千元", 3, 5, False), ("ok", 3, 6, False)]


def test_a_checked_commit_numbers_after_a_replaced_turn_and_after_none(store: Store) -> None:
    session = store.sessions.create_session("s", "buffer")
    first = store.turns.commit_turn(turn(session.id, "first 杭州"),
                                    erasures=store.sessions.erasures(session.id))
    assert (first.history_turn, first.number) == (1, 1)
    store.turns.commit_turn(turn(session.id, "second"))
    store.turns.hide_turn(session.id)  # /retry: its messages stay, out of memory
    again = store.turns.commit_turn(turn(session.id, "second again", "再来"),
                                    erasures=store.sessions.erasures(session.id))
    assert again.history_turn == 2
    assert numbered(store, session.id) == [
        ("first 杭州", 1, 1, False), ("ok", 1, 2, False),
        ("second", 2, 3, True), ("ok", 2, 4, True),
        ("second again", 2, 5, False), ("再来", 2, 6, False)]


def test_a_checked_commit_still_refuses_a_purge_or_a_deleted_session(store: Store) -> None:
    session = store.sessions.create_session("s", "buffer")
    seen = store.sessions.erasures(session.id)
    assert seen is not None
    with pytest.raises(StoreError) as purged:
        store.turns.commit_turn(turn(session.id, "杭州"), erasures=seen + 1)
    assert purged.value.kind is StoreFailure.ERASED_MEANWHILE
    store.sessions.delete_session("s")
    with pytest.raises(SessionGone):
        store.turns.commit_turn(turn(session.id, "杭州"), erasures=seen)
