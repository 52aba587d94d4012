"""Pinned drift-guard details: ids, listing, unpinning, and never pinning an unpinned text again."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chatmem.engine import Engine
from chatmem.memory import pins
from chatmem.providers.scripted import RULES
from chatmem.providers.scripted_summary import extractive_summary
from chatmem.store import Store


@pytest.fixture
def lossy_summaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """A summarizer that loses 五千元 and ORD-7731 every time it sees them."""
    monkeypatch.setitem(RULES, "summary", lambda m: extractive_summary(m)
                        .replace("五千元", "一笔预算").replace("ORD-7731", "the order"))


def pinned(store: Store, engine: Engine) -> list[tuple[str, str, str]]:
    return [(p.ref, p.text, p.source) for p in pins.pinned_facts(store, engine.session.id)]


def test_pins_get_ids_in_the_order_they_were_pinned(
    store: Store, make_engine: Callable[..., Engine], lossy_summaries: None,
) -> None:
    engine = make_engine("summary")
    engine.run_turn("我们的预算是五千元。")
    engine.run_turn("My order is ORD-7731.")
    assert pinned(store, engine) == [
        ("p1", "五千元", "summary v1 (pinned)"), ("p2", "ORD-7731", "summary v2 (pinned)")]
    made = pins.pinned_at(store, pins.pinned_facts(store, engine.session.id))
    versions = {s.version: s.created_at for s in store.summaries(engine.session.id)}
    assert sorted(made.values()) == [versions[1], versions[2]]


def test_an_unpinned_text_is_not_sent_and_never_pinned_again(
    store: Store, make_engine: Callable[..., Engine], lossy_summaries: None,
) -> None:
    engine = make_engine("summary")
    engine.run_turn("我们的预算是五千元，订单 ORD-7731。")
    [budget] = pins.find_pins(pins.pinned_facts(store, engine.session.id), " 五千元 ")
    pins.unpin(store, budget)
    facts = engine.build_context("？").part("facts")
    assert facts is not None and "五千元" not in facts.messages[0].content
    result = engine.run_turn("预算还是五千元，ORD-7731 不变。")
    assert result.notices[0].endswith(
        "; dropped by the summarizer, pinned: ORD-7731"
        "; dropped by the summarizer, not pinned (you unpinned them): 五千元")
    assert [p[1] for p in pinned(store, engine)] == ["ORD-7731"]


def test_ids_are_never_reused_and_name_one_pin_across_summary_strategies(
    store: Store, make_engine: Callable[..., Engine], lossy_summaries: None,
) -> None:
    engine = make_engine("summary")
    engine.run_turn("My order is ORD-7731.")
    [order] = pins.find_pins(pins.pinned_facts(store, engine.session.id), "P1")
    pins.unpin(store, order)
    engine.run_turn("我们的预算是五千元。")
    assert pinned(store, engine) == [("p2", "五千元", "summary v2 (pinned)")]
    # Pins of another summary strategy in the same session take the next ids.
    store.set_strategy_state(engine.session.id, "summary-buffer",
                             {"pinned": [["Lakeview Garden Hotel", 1, 3]]})
    assert pins.allocate_ids(store, engine.session.id, 2) == [3, 4]
    assert [p.ref for p in pins.find_pins(pins.pinned_facts(store, engine.session.id), "p3")] \
        == ["p3"]


def test_pins_stored_without_ids_are_still_listed_and_found_by_text(
    store: Store, make_engine: Callable[..., Engine],
) -> None:
    engine = make_engine("summary")
    store.set_strategy_state(engine.session.id, "summary", {"pinned": [["MU5137", 2]]})
    [legacy] = pins.pinned_facts(store, engine.session.id)
    assert (legacy.ref, legacy.pin_id, legacy.source) == ("", None, "summary v2 (pinned)")
    assert pins.find_pins([legacy], "mu5137") == [legacy]
    assert pins.find_pins([legacy], "MU513") == []
