"""`Engine.run_turn`'s `on_stored`: a front end hears the turn once it is stored, before
memory's update (the helper model's summary or facts), so it can answer its client then
(chatmem serve); the update's notices come with the result returned."""

from __future__ import annotations

from collections.abc import Callable

from chatmem.engine import Engine, TurnResult
from chatmem.store import Store


def test_on_stored_hears_each_turn_stored_before_its_summary_is_made(
        store: Store, make_engine: Callable[..., Engine]) -> None:
    engine = make_engine("summary")
    heard: list[tuple[str, int, int]] = []

    def stored(result: TurnResult) -> None:
        heard.append((result.reply, store.history.turn_count(engine.session.id),
                      len(store.memory.summaries(engine.session.id))))

    replies = [engine.run_turn(said, on_stored=stored).reply
               for said in ("I live in Lisbon.", "我住在里斯本。")]
    assert heard == [(replies[0], 1, 0), (replies[1], 2, 1)]
    assert len(store.memory.summaries(engine.session.id)) == 2
