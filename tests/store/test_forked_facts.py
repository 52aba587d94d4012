"""What a fork carries of its source's facts besides the live ones: the forgotten facts and
each fact's earlier values, on every fork (a full copy too), so a fork of a fork neither
brings back what was forgotten nor loses what a fact was before."""

from __future__ import annotations

from collections.abc import Callable

from registered import open_session

from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.store import FactScope, Store


def talk(engine: Engine, lines: list[str]) -> None:
    for line in lines:
        engine.run_turn(line)


def facts_of(store: Store, session: str, *, deleted: bool = False) -> dict[str, str]:
    record = store.sessions.session(session)
    return {f.key: f.value for f in store.facts.facts(session_id=record.id, include_deleted=True)
            if (f.deleted_at is not None) == deleted}


def earlier_values(store: Store, session: str) -> dict[str, list[tuple[str, int | None, bool]]]:
    """Key → its earlier values: (value, source turn, whether stated in `session`)."""
    record = store.sessions.session(session)
    facts = store.facts.facts(session_id=record.id, include_deleted=True)
    history = store.facts.fact_history([f.id for f in facts])
    return {f.key: [(h.value, h.source_turn, h.source_session_id == record.id)
                    for h in history.get(f.id, [])] for f in facts if history.get(f.id)}


def test_a_fact_forgotten_before_a_full_fork_stays_forgotten_in_a_fork_of_it(
        store: Store, make_engine: Callable[..., Engine], scripted) -> None:
    talk(make_engine("entity", name="a"), ["My name is Ada.", "我住在巴黎。", "My dog is Rex."])
    source = store.sessions.session("a")
    city = next(f for f in store.facts.facts(session_id=source.id) if f.key == "城市")
    store.facts.forget_fact(city.id)

    store.forks.fork_session("a", "b")  # a full copy: the extractor's state comes along
    assert facts_of(store, "b", deleted=True) == {"城市": "巴黎"}
    report = store.forks.fork_session("b", "c", at_turn=2)  # rebuilt from turns 1-2
    assert [g.owner for g in report.rebuilt] == ["facts"]
    open_session(store, Settings(), scripted, "c").run_turn("hi")
    assert facts_of(store, "c") == {"name": "Ada"}
    assert facts_of(store, "c", deleted=True) == {"城市": "巴黎"}


def test_a_fork_carries_the_earlier_values_of_the_facts_it_copies(
        store: Store, make_engine: Callable[..., Engine]) -> None:
    talk(make_engine("entity", name="a"), ["I live in Paris.", "I live in Lyon.", "ok"])
    source = store.sessions.session("a")
    store.facts.upsert_fact("昵称", "小明", scope=FactScope.SESSION, session_id=source.id)
    store.facts.upsert_fact("昵称", "明明", scope=FactScope.SESSION, session_id=source.id)
    forgotten = store.facts.upsert_fact("dog", "Rex", scope=FactScope.SESSION,
                                        session_id=source.id)
    store.facts.upsert_fact("dog", "Max", scope=FactScope.SESSION, session_id=source.id)
    store.facts.forget_fact(forgotten.id)
    assert earlier_values(store, "a") == {"city": [("Paris", 1, True)],
                                          "昵称": [("小明", None, True)],
                                          "dog": [("Rex", None, True)]}

    store.forks.fork_session("a", "b")
    assert facts_of(store, "b") == {"city": "Lyon", "昵称": "明明"}
    # Stated in the fork's own copy of the turn, as the facts themselves are.
    assert earlier_values(store, "b") == earlier_values(store, "a")
    store.forks.fork_session("b", "c")
    assert earlier_values(store, "c") == earlier_values(store, "a")


def test_an_earlier_value_from_a_turn_after_the_fork_is_left_out(
        store: Store, make_engine: Callable[..., Engine]) -> None:
    talk(make_engine("entity", name="a"), ["My name is Ada.", "ok", "I live in Paris."])
    source = store.sessions.session("a")
    # /remember after turn 3: the stated value replaces turn 3's.
    store.facts.upsert_fact("city", "Lyon", scope=FactScope.SESSION, session_id=source.id)
    assert earlier_values(store, "a") == {"city": [("Paris", 3, True)]}

    store.forks.fork_session("a", "early", at_turn=2)
    assert facts_of(store, "early") == {"city": "Lyon"}
    assert earlier_values(store, "early") == {}


def test_a_fork_keeps_when_a_copied_fact_ends_and_was_last_used(store: Store) -> None:
    """A fact kept `--for` a while never ended in a fork (its end was not copied), and one
    unused for fact_idle_days looked fresh there."""
    source = store.sessions.create_session("a", "entity", {})
    fact = store.facts.upsert_fact("门牌", "302", scope=FactScope.SESSION, session_id=source.id)
    store.retention.set_fact_expiry(fact.id, "2099-01-02T00:00:00.000+00:00")
    store.retention.mark_facts_used([fact.id])
    used = store.facts.fact(fact.id).used_at
    store.forks.fork_session("a", "b")
    copied = store.facts.facts(session_id=store.sessions.session("b").id)
    assert [(f.key, f.expires_at, f.used_at) for f in copied] == [
        ("门牌", "2099-01-02T00:00:00.000+00:00", used)]
