"""The chat's upkeep between turns (Engine.between_turns → Store.tidy) on every backend of
the `store` fixture: a plain file, an encrypted one and PostgreSQL, where there is nothing
to merge or fold. Recall finds every turn as before, and the turns stay whole."""

from __future__ import annotations

from collections.abc import Callable

from chatmem.engine import Engine
from chatmem.engine.upkeep import FOLD_EVERY
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
