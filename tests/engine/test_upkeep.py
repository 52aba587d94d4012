"""The chat's upkeep between turns (Engine.between_turns → Store.tidy) on every backend of
the `store` fixture: a plain file, an encrypted one and PostgreSQL, where there is nothing
to merge or fold. Recall finds every turn as before, and the turns stay whole."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest

from chatmem.engine import Engine, upkeep
from chatmem.engine.upkeep import FOLD_EVERY
from chatmem.lazy_patterns import lazy, made
from chatmem.store import Store

SAID = ["my order ORD-{i} ships to Porto", "我们第{i}天去杭州看西湖"]


def test_recall_finds_every_turn_after_the_upkeep_between_them(
        store: Store, make_engine: Callable[..., Engine]) -> None:
    engine = make_engine("retrieval")
    turns = 3 * FOLD_EVERY
    for i in range(turns):
        engine.run_turn(SAID[i % 2].format(i=i))
        engine.between_turns()
    assert store.history.turn_count(engine.session.id) == turns
    porto = store.recall.word_matches(engine.session.id, "Porto", before_turn=turns + 1,
                                      limit=100)
    hangzhou = store.recall.word_matches(engine.session.id, "杭州", before_turn=turns + 1,
                                         limit=100)
    # Each turn's input is the first of its two messages.
    assert set(porto.scores) >= {2 * i + 1 for i in range(0, turns, 2)}
    assert set(hangzhou.scores) >= {2 * i + 1 for i in range(1, turns, 2)}
    assert not set(porto.scores) & {2 * i + 1 for i in range(1, turns, 2)}


def test_no_turn_after_the_first_upkeep_compiles_a_pattern(
        store: Store, make_engine: Callable[..., Engine]) -> None:
    """The patterns are compiled at first use (chatmem.lazy_patterns): the first turn with
    Chinese in it compiled the Chinese time words' (~100 ms, in a turn of 10-20 ms). The
    upkeep between turns compiles what no turn has used yet, so that no later turn waits."""
    unused = lazy(r"(?<![每下])(?:上+个?|这个?)(?:周末|星期[一二三四五六日天])")
    engine = make_engine("retrieval")
    engine.run_turn(SAID[0].format(i=1))
    for _ in range(40):  # ~0.35-0.5 s of CPU in all, COMPILE_BETWEEN_S of it an upkeep
        engine.between_turns()
        if all(p._compiled is not None for p in made()):
            break
    assert unused._compiled is not None
    assert [p.pattern for p in made() if p._compiled is None] == []
    engine.run_turn(SAID[1].format(i=2) + "，上周末和这周三都说过 5月4号")
    assert [p.pattern for p in made() if p._compiled is None] == []


def test_the_first_upkeep_runs_the_full_collection_and_only_it(
        store: Store, make_engine: Callable[..., Engine],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Python's full collection (generation 2) ran inside the second turn after opening a
    history (75-85 ms CPU at 1,000 and 10,000 turns, the turn 10-20 ms): the process's
    first upkeep runs it instead, once."""
    # As in a process just started (raising=False: on a tree without it, the assertion says)
    monkeypatch.setattr(upkeep, "_collected", False, raising=False)
    full: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            full.append(1)

    engine = make_engine("retrieval")
    engine.run_turn(SAID[0].format(i=1))
    gc.callbacks.append(seen)
    try:
        engine.between_turns()
        assert len(full) == 1
        engine.run_turn(SAID[1].format(i=2))
        engine.between_turns()
        make_engine("retrieval").between_turns()  # another engine of the process: not again
    finally:
        gc.callbacks.remove(seen)
    assert len(full) == 1


def test_a_server_s_upkeep_leaves_the_process_s_to_its_idle_step(
        store: Store, make_engine: Callable[..., Engine],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A server's upkeep after a turn (`idle=False`) compiles nothing and collects nothing:
    its client's next request waited for both. `idle_upkeep`, which the server runs while no
    call is under way, compiles the patterns a step at a time, then collects, once."""
    monkeypatch.setattr(upkeep, "_collected", False)
    monkeypatch.setattr(upkeep, "_collect_due", False)
    full: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            full.append(1)

    unused = lazy("(?:" + "|".join(f"服务器{i}号" for i in range(500)) + ")")
    engine = make_engine("retrieval")
    engine.run_turn(SAID[0].format(i=1))
    gc.callbacks.append(seen)
    try:
        engine.between_turns(idle=False)
        assert unused._compiled is None
        assert full == []
        steps = 0
        while upkeep.idle_upkeep(0.0):
            steps += 1
            assert steps < 10_000
        assert unused._compiled is not None
        assert [p.pattern for p in made() if p._compiled is None] == []
        assert len(full) == 1
        assert upkeep.idle_upkeep(0.0) is False
        engine.between_turns()  # a chat's, in the same process: not again
    finally:
        gc.callbacks.remove(seen)
    assert len(full) == 1
