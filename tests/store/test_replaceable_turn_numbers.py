"""A turn that cannot be replaced is named as logs, inspect and `sessions show` number it
(TurnRecord.turn), not by its request's number: after a cancelled reply the two differ."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chatmem.engine import Engine
from chatmem.engine.resend import resend_last
from chatmem.errors import ReplaceRefusal, TurnNotReplaceable
from chatmem.store import Store
from chatmem.store.records import TurnStatus


def _after_a_cancelled_reply(engine: Engine) -> None:
    engine.run_turn("我们五月去杭州")

    def interrupt(delta: str) -> None:
        raise KeyboardInterrupt

    assert engine.run_turn("订酒店", on_delta=interrupt).status is TurnStatus.CANCELLED
    engine.run_turn("My budget is 3000 yuan.")


def test_a_turn_memory_holds_is_named_by_its_turn(
        store: Store, make_engine: Callable[..., Engine]) -> None:
    """`chat slowchat` on summary after one cancelled reply: /retry said "turn 3 is already
    in memory … --at-turn 1" where logs showed turn 2."""
    engine = make_engine("summary")
    _after_a_cancelled_reply(engine)
    last = store.turns.turn(engine.session.id)
    assert (last.number, last.turn) == (3, 2)
    with pytest.raises(TurnNotReplaceable) as refused:
        resend_last(engine, "My budget is 4000 yuan.")
    assert (refused.value.turn, refused.value.why) == (2, ReplaceRefusal.SUMMARIZED)
    assert str(refused.value) == ("turn 2 is already in memory (a summary covers it); "
                                  "/fork SESSION --at-turn 1 asks again on a branch")


def test_a_turn_not_last_or_another_chats_is_named_by_its_turn(
        store: Store, make_engine: Callable[..., Engine]) -> None:
    engine = make_engine("buffer")
    _after_a_cancelled_reply(engine)
    sid = engine.session.id
    first = store.turns.turns(sid)[0].id
    with pytest.raises(TurnNotReplaceable) as refused:
        store.turns.replaceable_turn(sid, expected=first)
    assert (refused.value.turn, refused.value.why) == (2, ReplaceRefusal.NOT_YOURS)
    assert str(refused.value).startswith("turn 2 was added by another chat")
    store.history.import_messages(sid, [{"role": "user", "content": "后来的消息"}])
    with pytest.raises(TurnNotReplaceable) as refused:
        store.turns.replaceable_turn(sid)
    assert (refused.value.turn, refused.value.why) == (2, ReplaceRefusal.NOT_LAST)
    assert str(refused.value).startswith("turn 2 is not the last turn in history")
