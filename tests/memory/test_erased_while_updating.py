"""A purge that lands while a memory update is under way (a slow summarizer or extractor, the
purge run in a second shell) is not undone by it: the update's write is dropped, said, and
made again from the purged text next turn; an extractor never stores the purge's marker as a
value. On every backend of the `history` fixture, the purge run by another connection from
inside the helper model's call (where a slow model would be busy), so no timing is involved.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from acting_providers import ActsWhile
from conftest import History

from chatmem.engine import Engine
from chatmem.memory import sensitive_turns
from chatmem.memory.extraction import STATE_KEY
from chatmem.memory.state import SessionState
from chatmem.notices import DerivedMemory, ErasedWhileUpdating, MemoryUpdateFailed
from chatmem.privacy.mentions import MARKER
from chatmem.privacy.purge import purge_fact
from chatmem.providers.base import Purpose
from chatmem.render.notices import notice_text
from chatmem.store import Store


def purging(history: History, sid: int, key: str) -> Callable[[], None]:
    def purge() -> None:
        with history.open() as other:
            (fact,) = [f for f in other.facts.facts(session_id=sid) if f.key == key]
            purge_fact(other, fact.id)
    return purge


def stored_text(store: Store, sid: int) -> str:
    """Every summary, fact and strategy state the session keeps, as one text."""
    rows = [*store.db.execute("SELECT text FROM summaries WHERE session_id = ?", [sid]),
            *store.db.execute("SELECT key, value FROM facts WHERE session_id = ?", [sid]),
            *store.db.execute("SELECT value FROM strategy_state WHERE session_id = ?", [sid])]
    return json.dumps([list(r) for r in rows], ensure_ascii=False)


def erasure_notices(notices: list[Any]) -> list[ErasedWhileUpdating]:
    return [n for n in notices if isinstance(n, ErasedWhileUpdating)]


def test_a_summary_folded_across_a_purge_is_dropped_and_folded_again_from_the_purged_text(
        make_engine: Callable[..., Engine[Store]], store: Store, history: History) -> None:
    model = ActsWhile("complete")
    engine = make_engine("summary+entity", provider=model)
    sid = engine.session.id
    engine.run_turn("My city is Rome")
    assert "Rome" in stored_text(store, sid)
    # What a second shell's `facts forget --purge` does while the summarizer is busy.
    model.arm(purging(history, sid, "city"), Purpose.SUMMARY)

    result = engine.run_turn("Reminder: my city is Rome")

    assert model.armed is None  # the purge ran, inside the summarizer's call
    assert erasure_notices(result.notices) == [ErasedWhileUpdating(DerivedMemory.SUMMARY, 2, 2)]
    assert not any(isinstance(n, MemoryUpdateFailed) for n in result.notices)
    assert notice_text(result.notices[0]).startswith(
        "the summary of turn 2 was not stored: text was erased from this session")
    kept = stored_text(store, sid)
    assert "Rome" not in kept
    # The extractor ran after the purge and read "my city is [forgotten]": not a value.
    assert store.facts.facts(session_id=sid) == []
    assert MARKER not in json.dumps([f.value for f in store.facts.facts(session_id=sid)])

    # Next turn folds turns 2–3 from the text as it is now; nothing sends Rome again.
    after = engine.run_turn("What should I pack? 我该带什么？")
    assert erasure_notices(after.notices) == []
    latest = store.memory.latest_summary(sid, "summary")
    assert latest is not None and "Reminder" in latest.text
    assert "Rome" not in stored_text(store, sid)
    sent = engine.build_context("Where do I live?").messages()
    assert not any("Rome" in m["content"] for m in sent)


def test_facts_extracted_across_a_purge_are_dropped_and_read_again_from_the_purged_text(
        make_engine: Callable[..., Engine[Store]], store: Store, history: History) -> None:
    model = ActsWhile("complete")
    engine = make_engine("entity", provider=model)
    sid = engine.session.id
    engine.run_turn("My city is Paris")
    assert [(f.key, f.value) for f in store.facts.facts(session_id=sid)] == [("city", "Paris")]
    model.arm(purging(history, sid, "city"), Purpose.FACTS)

    result = engine.run_turn("Reminder: my city is Paris")

    assert model.armed is None
    assert erasure_notices(result.notices) == [ErasedWhileUpdating(DerivedMemory.FACTS, 2, 2)]
    assert notice_text(result.notices[0]).startswith(
        "the facts found in turn 2 were not stored: text was erased")
    assert store.facts.facts(session_id=sid) == []  # not city = Paris from turn 2
    assert store.memory.strategy_state(sid, STATE_KEY)["done_turn"] == 1  # read again

    after = engine.run_turn("我的预算是五千元")
    assert erasure_notices(after.notices) == []
    assert store.memory.strategy_state(sid, STATE_KEY)["done_turn"] == 3
    facts = [(f.key, f.value) for f in store.facts.facts(session_id=sid)]
    assert facts == [("预算", "五千元")]  # turn 2 read again: "[forgotten]" is no city
    assert "Paris" not in stored_text(store, sid)


class ReadOnceThenOther(SessionState):
    """A session state whose first read of the secret-guard note lets another connection note
    a turn of its own right after (a chat and a catch-up folding at once)."""

    def __init__(self, store: Store, session_id: int, other: Callable[[], None]) -> None:
        super().__init__(store, session_id)
        self.other: Callable[[], None] | None = other

    def get(self, strategy: str) -> dict[str, Any]:
        values = super().get(strategy)
        if strategy == sensitive_turns.SENSITIVE_KEY and self.other is not None:
            (other, self.other) = (self.other, None)
            other()
        return values


def test_two_connections_noting_secrets_at_once_keep_both_notes(
        make_engine: Callable[..., Engine[Store]], store: Store, history: History) -> None:
    engine = make_engine("buffer")
    for text in ["Hello", "My card is 4111 1111 1111 1111", "ok", "我的密码是 hunter2-龙"]:
        engine.run_turn(text)
    sid = engine.session.id
    turns = engine.history().turns(1, 4)

    def note_turn_two() -> None:
        with history.open() as other:
            state = SessionState(other, sid)
            guard, _ = sensitive_turns.guard_for(state, turns[:2])
            sensitive_turns.remember(state, guard, turns[:2])

    state = ReadOnceThenOther(store, sid, note_turn_two)
    guard, _ = sensitive_turns.guard_for(SessionState(store, sid), turns[3:])
    sensitive_turns.remember(state, guard, turns[3:])
    assert state.other is None
    assert store.memory.strategy_state(sid, sensitive_turns.SENSITIVE_KEY)["turns"] == [2, 4]
