"""Retention with an injected clock: idle sessions, facts past their end, read extends life."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conftest import History
from file_hash import file_bytes
from matches import matches
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.errors import UsageError
from chatmem.privacy.retention import expiry_of, forget_user, parse_duration, prune
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render.sessions import erasure_text
from chatmem.store import ExpiryCause, Store, VectorRow
from chatmem.store.connection import fetch_value
from chatmem.timestamps import stamp

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


class Clock:
    """The store's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def days(self, n: float) -> datetime:
        self.now = T0 + timedelta(days=n)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timed(history: History, clock: Clock):
    with history.open(clock=clock) as store:
        yield store


def chat(store: Store, name: str, lines: list[str], strategy: str = "entity",
         user: str = "ana") -> Engine:
    engine = open_session(store, Settings(system="Be brief.", user=user, user_facts=True),
                          ScriptedProvider(), name, strategy=strategy)
    for line in lines:
        engine.run_turn(line)
    return engine


@pytest.mark.parametrize(("text", "seconds"), [
    ("30d", 30 * 86400), ("30", 30 * 86400), ("12h", 12 * 3600), ("2w", 14 * 86400),
    ("1y", 365 * 86400), ("45min", 45 * 60), ("1.5 days", 1.5 * 86400), (" 7D ", 7 * 86400),
    ("6mo", 6 * 30 * 86400), ("1 month", 30 * 86400), ("3MONTHS", 90 * 86400),
    ("30天", 30 * 86400), ("12小时", 12 * 3600), ("2 周", 14 * 86400), ("3个星期", 21 * 86400),
    ("6个月", 6 * 30 * 86400), ("1年", 365 * 86400), ("45分钟", 45 * 60),
    ("1.5 天", 1.5 * 86400), ("２個小時", 2 * 3600), ("３０天", 30 * 86400),
])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["", "soon", "-3d", "0d", "3 fortnights", "d30", "三天",
                                  "3天d", "0天", "3秒"])
def test_a_bad_duration_is_one_clear_error(text: str) -> None:
    with pytest.raises(UsageError, match=rf"^--older-than must be a length of time like 30d, "
                                         rf"12h, 2w or 1y, got {text!r}$"):
        parse_duration(text, "--older-than")


@pytest.mark.parametrize(("text", "number"), [("6m", "6"), ("6M", "6"), (" 1.5 m ", "1.5")])
def test_a_bare_m_is_refused_as_minutes_or_months(text: str, number: str) -> None:
    # `prune --older-than 6M` meant six minutes and erased nearly everything.
    with pytest.raises(UsageError, match=rf"^--older-than {text.strip()!r} is ambiguous: write "
                                         rf"{number}min for minutes or {number}mo for months$"):
        parse_duration(text, "--older-than")


def test_idle_sessions_are_erased_with_everything_they_own(
    timed: Store, clock: Clock, history: History
) -> None:
    old = chat(timed, "old", ["My order is ZX-1001 for the teal sofa.", "我们去杭州琉璃客栈。"])
    timed.vectors.save_vectors("test-model", 2, [VectorRow(m.id, b"\x01" * 8, b"\x02" * 8)
                                          for m in timed.history.messages(old.session.id)])
    # A minute apart: the order they are listed in is their time's, not their ids' (random
    # on PostgreSQL).
    clock.days(10)
    kept = chat(timed, "kept", ["The delivery is at the blue gate."])
    clock.days(10 + 1 / 1440)
    forever = chat(timed, "forever", ["Keep this one."])
    timed.retention.set_retention(forever.session.id, 0)
    clock.days(10 + 2 / 1440)
    own = chat(timed, "own", ["My own retention is long."])
    timed.retention.set_retention(own.session.id, 100)
    assert timed.facts.facts(session_id=old.session.id)  # the extractor kept the order

    clock.days(41)  # old idle 41 days; the others 31
    dry = prune(timed, clock.now, retention_days=30, fact_idle_days=None, dry_run=True)
    assert sorted(s.name for s in dry.sessions) == ["kept", "old"]
    assert timed.sessions.find_session("old") is not None
    assert erasure_text(prune(timed, clock.now, retention_days=40, fact_idle_days=None)) == (
        "erased 1 session (4 messages)")
    assert [row.name for row in timed.sessions.list_sessions()] == ["own", "forever", "kept"]
    counts = {table: fetch_value(timed.db, f"SELECT count(*) FROM {table}") for table in
              ("messages", "turns", "message_vectors", "summaries", "strategy_state")}
    assert counts["message_vectors"] == 0 and counts["messages"] == 6 and counts["turns"] == 3
    assert fetch_value(timed.db, "SELECT count(*) FROM facts WHERE session_id = ?",
                        [old.session.id]) == 0
    assert list(matches(timed, kept.session.id, "teal sofa")) == []
    if history.kind == "plain":
        # A plain file: the grep sees what is kept, so what it misses was erased.
        data = file_bytes(history.location)
        assert b"blue gate" in data
        for gone in ("ZX-1001", "teal sofa", "琉璃客栈"):
            assert gone.encode() not in data, gone


def test_activity_keeps_a_session(timed: Store, clock: Clock) -> None:
    engine = chat(timed, "s", ["first"])
    clock.days(25)
    engine.run_turn("still here")
    clock.days(50)  # idle 25 days since the last turn
    assert prune(timed, clock.now, retention_days=30, fact_idle_days=None).empty
    clock.days(56)
    assert [s.name for s in prune(timed, clock.now, retention_days=30,
                                  fact_idle_days=None).sessions] == ["s"]


def test_a_fact_with_its_own_end_is_gone_at_that_end(timed: Store, clock: Clock) -> None:
    engine = chat(timed, "s", ["hi"])
    fact = timed.facts.upsert_fact("door code", "blue 7", scope="session",
                                   session_id=engine.session.id)
    timed.retention.set_fact_expiry(fact.id, stamp(T0 + timedelta(days=7)))
    engine.run_turn("what is the door code?")
    assert "blue 7" in str(timed.turns.turn(engine.session.id).context)
    clock.days(6)
    assert [f.key for f in engine.state.live_facts()] == ["door code"]
    assert expiry_of(timed.facts.fact(fact.id), None) == "2026-01-08T12:00:00+00:00"
    clock.days(8)
    # Past its end it never reaches a context again, even before it is pruned.
    assert engine.state.live_facts() == []
    assert "blue 7" not in str(engine.build_context("the code?").to_json())
    erased = prune(timed, clock.now, retention_days=None, fact_idle_days=None)
    assert [(e.fact.key, e.cause, e.ended_at) for e in erased.facts] == [
        ("door code", ExpiryCause.ENDED, T0 + timedelta(days=7))]
    assert timed.facts.facts(include_deleted=True) == []
    # The turn that sent it keeps a marker where its value was.
    assert "blue 7" not in str(timed.turns.turn(engine.session.id, 2).context)


def test_reading_a_fact_extends_its_life(timed: Store, clock: Clock) -> None:
    engine = chat(timed, "s", ["My order number is ORD-7731.", "I live in Porto."])
    remembered = timed.facts.upsert_fact("budget", "5000 EUR", scope="session",
                                         session_id=engine.session.id)
    order, city = sorted(engine.state.live_facts(), key=lambda f: f.id)[:2]
    assert (order.key, city.key) == ("order number", "city")
    assert expiry_of(timed.facts.fact(order.id), 30) == "2026-01-31T12:00:00+00:00"
    clock.days(20)
    engine.run_turn("a turn that sends every fact")  # entity sends all while they fit
    assert timed.facts.fact(order.id).used_at == "2026-01-21T12:00:00.000+00:00"
    assert expiry_of(timed.facts.fact(order.id), 30) == "2026-02-20T12:00:00+00:00"
    # Only this session's facts were sent; a fact no context sends ages.
    clock.days(45)
    assert prune(timed, clock.now, retention_days=None, fact_idle_days=30).empty
    clock.days(51)
    erased = prune(timed, clock.now, retention_days=None, fact_idle_days=30)
    assert sorted(e.fact.key for e in erased.facts) == ["city", "order number"]
    assert (erased.facts[0].cause, erased.facts[0].unused_days) == (ExpiryCause.UNUSED, 31)
    # /remember facts have no idle end: the user gave them none.
    assert [f.id for f in timed.facts.facts(include_deleted=True)] == [remembered.id]
    assert expiry_of(timed.facts.fact(remembered.id), 30) is None


def test_forget_user_erases_the_profile_and_nothing_else(
    timed: Store, history: History
) -> None:
    chat(timed, "ana-trip", ["My name is Anastazja Wolny.", "We go to 琉璃客栈 in May."])
    chat(timed, "ana-work", ["The project code is QX-48213."])
    bob = chat(timed, "bob-trip", ["My name is Bartholomew Quince."], user="bob")
    assert {f.user for f in timed.facts.facts() if f.scope == "user"} == {"ana", "bob"}
    with history.open() as reader:  # an idle reader keeps WAL and shm
        erased = forget_user(timed, "ana")
        assert erasure_text(erased) == "erased 2 sessions (6 messages) and 1 fact"
        assert [r.name for r in reader.sessions.list_sessions()] == ["bob-trip"]
        assert [f.value for f in reader.facts.facts()] == ["Bartholomew Quince"]
        if history.kind == "plain":
            data = file_bytes(history.location)
            assert b"Bartholomew" in data
            for gone in ("Anastazja", "琉璃客栈", "QX-48213", "ana-trip", "ana-work"):
                assert gone.encode() not in data, gone
    assert bob.state.live_facts()[0].value == "Bartholomew Quince"
