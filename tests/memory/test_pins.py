"""Pinned drift-guard details: ids, listing, unpinning, and never pinning an unpinned text again."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from conftest import History
from waiting import HANG, wait_until

from chatmem.engine import Engine
from chatmem.memory import pins
from chatmem.notices import SummaryUpdated
from chatmem.providers.scripted import RULES
from chatmem.providers.scripted_summary import extractive_summary
from chatmem.store import Store


@pytest.fixture
def lossy_summaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """A summarizer that loses 五千元 and ORD-7731 every time it sees them."""
    monkeypatch.setitem(RULES, "summary", lambda m: extractive_summary(m)
                        .replace("五千元", "一笔预算").replace("ORD-7731", "the order"))


def pinned(store: Store, engine: Engine) -> list[tuple[str, str, str]]:
    return [(p.ref, p.text, p.source) for p in pins.pinned_facts(store.memory, engine.session.id)]


def test_pins_get_ids_in_the_order_they_were_pinned(
    store: Store, make_engine: Callable[..., Engine], lossy_summaries: None,
) -> None:
    engine = make_engine("summary")
    engine.run_turn("我们的预算是五千元。")
    engine.run_turn("My order is ORD-7731.")
    assert pinned(store, engine) == [
        ("p1", "五千元", "summary v1 (pinned)"), ("p2", "ORD-7731", "summary v2 (pinned)")]
    made = pins.pinned_at(store.memory, pins.pinned_facts(store.memory, engine.session.id))
    versions = {s.version: s.created_at for s in store.memory.summaries(engine.session.id)}
    assert sorted(made.values()) == [versions[1], versions[2]]


def test_an_unpinned_text_is_not_sent_and_never_pinned_again(
    store: Store, make_engine: Callable[..., Engine], lossy_summaries: None,
) -> None:
    engine = make_engine("summary")
    engine.run_turn("我们的预算是五千元，订单 ORD-7731。")
    [budget] = pins.find_pins(pins.pinned_facts(store.memory, engine.session.id), " 五千元 ")
    pins.unpin(store, budget)
    facts = engine.build_context("？").part("facts")
    assert facts is not None and "五千元" not in facts.messages[0].content
    result = engine.run_turn("预算还是五千元，ORD-7731 不变。")
    assert isinstance(notice := result.notices[0], SummaryUpdated)
    assert (notice.pinned, notice.refused) == (("ORD-7731",), ("五千元",))
    assert [p[1] for p in pinned(store, engine)] == ["ORD-7731"]


def test_ids_are_never_reused_and_name_one_pin_across_summary_strategies(
    store: Store, make_engine: Callable[..., Engine], lossy_summaries: None,
) -> None:
    engine = make_engine("summary")
    engine.run_turn("My order is ORD-7731.")
    [order] = pins.find_pins(pins.pinned_facts(store.memory, engine.session.id), "P1")
    pins.unpin(store, order)
    engine.run_turn("我们的预算是五千元。")
    assert pinned(store, engine) == [("p2", "五千元", "summary v2 (pinned)")]
    # Pins of another summary strategy in the same session take the next ids.
    store.memory.set_strategy_state(engine.session.id, "summary-buffer",
                                    {"pinned": [["Lakeview Garden Hotel", 1, 3]]})
    assert pins.allocate_ids(store, engine.session.id, 2) == [3, 4]
    assert [p.ref for p in pins.find_pins(pins.pinned_facts(store.memory, engine.session.id),
                                          "p3")] \
        == ["p3"]


def test_pins_stored_without_ids_are_still_listed_and_found_by_text(
    store: Store, make_engine: Callable[..., Engine],
) -> None:
    engine = make_engine("summary")
    store.memory.set_strategy_state(engine.session.id, "summary", {"pinned": [["MU5137", 2]]})
    [legacy] = pins.pinned_facts(store.memory, engine.session.id)
    assert (legacy.ref, legacy.pin_id, legacy.source) == ("", None, "summary v2 (pinned)")
    assert pins.find_pins([legacy], "mu5137") == [legacy]
    assert pins.find_pins([legacy], "MU513") == []


def test_an_unpin_while_the_summarizer_is_busy_is_not_undone_by_its_fold(
    store: Store, make_engine: Callable[..., Engine], lossy_summaries: None,
    monkeypatch: pytest.MonkeyPatch, history: History,
) -> None:
    engine = make_engine("summary")
    engine.run_turn("我们的预算是五千元。")
    summarize = RULES["summary"]

    def unpin_meanwhile(messages: Any) -> str:
        # Another process (its own connection) unpins while this fold waits for the model.
        with history.open() as other:
            [budget] = pins.find_pins(pins.pinned_facts(other.memory, engine.session.id), "p1")
            pins.unpin(other, budget)
        return str(summarize(messages))

    monkeypatch.setitem(RULES, "summary", unpin_meanwhile)
    engine.run_turn("My order is ORD-7731.")
    assert [p[1] for p in pinned(store, engine)] == ["ORD-7731"]
    state = store.memory.strategy_state(engine.session.id, "summary")
    assert state[pins.UNPINNED_KEY] == ["五千元"]


def test_unpin_reads_and_writes_under_the_write_lock(
    store: Store, make_engine: Callable[..., Engine], lossy_summaries: None,
    history: History, monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = make_engine("summary")
    engine.run_turn("我们的预算是五千元，订单 ORD-7731。")
    [budget] = pins.find_pins(pins.pinned_facts(store.memory, engine.session.id), "五千元")
    holding, unpin_takes_the_lock = threading.Event(), threading.Event()
    take_the_lock = store.write

    def announced_write() -> Any:
        unpin_takes_the_lock.set()
        return take_the_lock()

    monkeypatch.setattr(store, "write", announced_write)

    def fold_in_another_process() -> None:
        with history.open() as other, other.write():
            state = other.memory.strategy_state(engine.session.id, "summary")
            other.memory.set_strategy_state(engine.session.id, "summary", {
                pins.PINNED_KEY: [*state[pins.PINNED_KEY], ["Lakeview Garden Hotel", 2, 3]]})
            holding.set()
            # Committed only once unpin asks for the lock, however late that is: whatever
            # unpin read before asking misses this fold.
            unpin_takes_the_lock.wait(HANG)

    folding = threading.Thread(target=fold_in_another_process)
    folding.start()
    wait_until(lambda: holding.is_set() or not folding.is_alive(),
               "the other process holds the write lock")
    assert holding.is_set()
    pins.unpin(store, budget)
    folding.join()
    assert unpin_takes_the_lock.is_set()
    assert [p[1] for p in pinned(store, engine)] == ["ORD-7731", "Lakeview Garden Hotel"]
