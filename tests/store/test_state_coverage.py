"""What a strategy's stored state covers (store.state_coverage): recorded by chatmem when an
update stores it, so a fork at an earlier turn rebuilds a plugin's state and the turn it
covers is not replaced, whatever the plugin names its keys."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from plugin_site import LEDGER, Install

from chatmem.engine import Engine
from chatmem.engine.resend import resend_last
from chatmem.errors import ReplaceRefusal, TurnNotReplaceable
from chatmem.store import Store
from chatmem.store.state_coverage import COVERS_KEY, state_coverage


@pytest.fixture
def ledger(installed: Install, make_engine: Callable[..., Engine]) -> Callable[..., Engine]:
    installed("chatmem-ledger", "chatmem_ledger", LEDGER, name="ledger")
    return lambda name: make_engine("ledger", name=name)


def said(engine: Engine, text: str) -> str:
    """The ledger the context of `text` sends."""
    part = engine.run_turn(text).context.part("summary")
    return part.messages[0].content if part else ""


def test_a_fork_before_the_turns_a_plugin_state_covers_rebuilds_it(
        store: Store, ledger: Callable[..., Engine], scripted) -> None:
    engine = ledger("FK")
    for line in ("first 111", "second 222", "third 333"):
        engine.run_turn(line)
    source = store.sessions.session("FK")
    # The plugin's own keys only: chatmem's record stays out of what it reads.
    assert store.memory.strategy_state(source.id, "ledger") == {
        "covered": 3, "items": ["1:111", "2:222", "3:333"]}
    assert state_coverage(store.db, source.id) == {"ledger": 3}

    early = store.forks.fork_session("FK", "FK2", at_turn=1)
    assert [(g.owner, g.covers_turn) for g in early.rebuilt] == [("ledger", 3)]
    assert early.copied == []
    fork = store.sessions.session("FK2")
    assert store.memory.strategy_state(fork.id, "ledger") == {}
    from registered import open_session

    from chatmem.config.settings import Settings

    resumed = open_session(store, Settings(), scripted, "FK2")
    assert said(resumed, "next 444") == "账本：1:111"  # rebuilt from turn 1 alone
    assert said(resumed, "again") == "账本：1:111；2:444"

    whole = store.forks.fork_session("FK", "FK3", at_turn=3)
    assert [(g.owner, g.covers_turn) for g in whole.copied] == [("ledger", 3)]
    assert store.memory.strategy_state(store.sessions.session("FK3").id, "ledger")[
        "items"] == ["1:111", "2:222", "3:333"]


def test_a_turn_a_plugin_state_covers_is_not_replaced(
        store: Store, ledger: Callable[..., Engine]) -> None:
    engine = ledger("U1")
    engine.run_turn("price 5555")
    sid = engine.session.id
    before = store.history.messages(sid)
    with pytest.raises(TurnNotReplaceable) as refused:
        resend_last(engine, "price 6666")
    assert (refused.value.turn, refused.value.why) == (1, ReplaceRefusal.STATE)
    assert str(refused.value) == ("turn 1 is already in memory (ledger's stored state covers "
                                  "it); /fork SESSION --at-turn 0 asks again on a branch")
    assert store.history.messages(sid) == before
    assert store.turns.turn(sid).superseded_by is None


def test_built_in_states_cover_what_they_were_derived_from(
        store: Store, make_engine: Callable[..., Engine]) -> None:
    """A summary's state covers its boundary, the fact extractor's the turns it read, and the
    secret guard's turn list and the pin counter no turn: a turn after the boundary is still
    replaced, and a fork copies them as before."""
    engine = make_engine("summary-buffer+entity", max_tokens=300)
    for line in ("my card is 4111 1111 1111 1111", "I live in Lisbon.", "我们五月去杭州",
                 "Tell me about comets, please, in some detail.", "And tides?"):
        engine.run_turn(line)
    sid = engine.session.id
    covers = state_coverage(store.db, sid)
    boundary = store.memory.strategy_state(sid, "summary-buffer")["boundary_turn"]
    assert 0 < boundary < 5
    assert covers["summary-buffer"] == boundary and covers["facts"] == 5
    assert covers.get("sensitive", 0) == covers.get("pins", 0) == 0
    resend_last(engine, "And waves?")
    report = store.forks.fork_session(engine.session.name, "b", at_turn=boundary)
    assert [g.owner for g in report.copied] == ["summary-buffer"]


def test_a_state_stored_before_coverage_was_recorded(
        store: Store, ledger: Callable[..., Engine]) -> None:
    """Its *_turn value (chatmem's own strategies kept one) when it has one; else a strategy
    that ran turns here may hold every turn, and a namespace no strategy has, none."""
    engine = ledger("old")
    engine.run_turn("a 1")
    engine.run_turn("b 2")
    sid = engine.session.id
    store.db.execute("DELETE FROM strategy_state WHERE key = ?", [COVERS_KEY])
    store.memory.set_strategy_state(sid, "summary", {"boundary_turn": 1})
    store.memory.set_strategy_state(sid, "pins", {"last": 3})
    assert state_coverage(store.db, sid) == {"ledger": 2, "summary": 1, "pins": 0}
    with pytest.raises(TurnNotReplaceable) as refused:
        resend_last(engine, "b 3")
    assert refused.value.why == ReplaceRefusal.STATE


def test_an_unreadable_coverage_row_is_unknown_not_an_error(
        store: Store, make_engine: Callable[..., Engine]) -> None:
    """A row written outside chatmem (a write share's grantee by SQL, a hand) whose value is
    not JSON: read as a state of unknown coverage (the reading of a row stored before
    coverage was recorded), so fork and /retry go on rather than failing on it."""
    engine = make_engine("window", name="坏行", k=2)
    for line in ("first 111", "second 222"):
        engine.run_turn(line)
    session = store.sessions.session("坏行")
    with store.db.write():
        for key, value in ((COVERS_KEY, "{"), ("done_turn", "[[["), ("other", "not json")):
            store.db.execute("INSERT INTO strategy_state (session_id, strategy, key, value)"
                             " VALUES (?, ?, ?, ?)", [session.id, "ledger2", key, value])
    assert state_coverage(store.db, session.id) == {"ledger2": 0}  # never ran here
    fork = store.forks.fork_session("坏行", "坏行2", at_turn=1)
    assert fork.copied == [] and store.sessions.session("坏行2")
    resend_last(engine)  # /retry: nothing of this session's memory covers turn 2
