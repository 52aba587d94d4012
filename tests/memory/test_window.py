"""`window`: the last k whole turns."""

from __future__ import annotations

import pytest
from listed_history import ListHistory, scratch_state
from registered import create_strategy

from chatmem.errors import StrategyError
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import Message
from chatmem.memory.reasons import DroppedTurns, NewestTurns
from chatmem.tokens import counter_for_model

COUNTER = counter_for_model(None, exact=True)


def msg(role: str, content: str, id: int) -> Message:
    return Message(role, content, COUNTER.count_message(role, content), id)


def history(turns: int, greeting: bool = False) -> ListHistory:
    messages = [msg("assistant", "你好！", 0)] if greeting else []
    for n in range(1, turns + 1):
        messages += [msg("user", f"question {n}", 2 * n - 1),
                     msg("assistant", f"answer {n}", 2 * n)]
    return ListHistory.from_messages(messages)


def request(h: ListHistory, system: str | None = "Be brief.") -> ContextRequest:
    return ContextRequest(history=h, input=msg("user", "now?", 999), counter=COUNTER, system=system,
                          state=scratch_state())


def test_keeps_the_last_k_turns() -> None:
    context = create_strategy("window", {"k": "2"}).build(request(history(5)))
    assert [m["content"] for m in context.messages()] == [
        "Be brief.", "question 4", "answer 4", "question 5", "answer 5", "now?"]
    history_part = context.part("history")
    assert history_part is not None
    assert history_part.reason == NewestTurns("window", "k", 2, (4, 5), (1, 3))
    assert context.dropped == (DroppedTurns((1, 3)),)


def test_fewer_turns_than_k_sends_them_all() -> None:
    context = create_strategy("window").build(request(history(3), system=None))
    assert len(context.messages()) == 7 and context.dropped == ()
    assert [p.kind for p in context.parts] == ["history", "input"]


def test_k_zero_sends_only_system_and_input() -> None:
    context = create_strategy("window", {"k": "0"}).build(request(history(3)))
    assert [p.kind for p in context.parts] == ["system", "input"]


def test_a_greeting_the_session_opens_with_is_sent_in_place() -> None:
    # Turn 1 is the greeting alone (a character app's or a transcript's opening): it is the
    # start of the conversation, not a reply cut from its question, so it is not dropped.
    context = create_strategy("window", {"k": "10"}).build(request(history(2, greeting=True)))
    assert [m["content"] for m in context.messages()] == [
        "Be brief.", "你好！", "question 1", "answer 1", "question 2", "answer 2", "now?"]
    assert context.dropped == ()


def test_drop_leading_assistant_keeps_the_sessions_own_greeting() -> None:
    # Plugins written for the earlier rule call it (the README's anchor example): the
    # greeting turn 1 opens with stays; a selection that opens on any other assistant
    # message (a turn cut from its question) still drops it.
    from dataclasses import replace

    from chatmem.memory.assembly import drop_leading_assistant

    turns = list(history(2, greeting=True).turns(1, 3))
    assert [t.number for t in drop_leading_assistant(turns)] == [1, 2, 3]
    cut = replace(turns[2], messages=turns[2].messages[1:])
    assert [t.number for t in drop_leading_assistant([cut, turns[1]])] == [2]


def test_a_window_past_the_greeting_drops_it_and_says_so() -> None:
    context = create_strategy("window", {"k": "2"}).build(request(history(2, greeting=True)))
    assert "你好！" not in [m["content"] for m in context.messages()]
    part = context.part("history")
    assert part is not None and part.reason == NewestTurns("window", "k", 2, (2, 3), (1, 1))
    assert context.dropped == (DroppedTurns((1, 1)),)


@pytest.mark.parametrize(("raw", "message"), [
    ("abc", "parameter k='abc' of strategy 'window' must be a whole number"),
    ("-2", "parameter k='-2' of strategy 'window' must be at least 0"),
    ("1.5", "parameter k='1.5' of strategy 'window' must be a whole number"),
])
def test_bad_k(raw: str, message: str) -> None:
    with pytest.raises(StrategyError) as caught:
        create_strategy("window", {"k": raw})
    assert str(caught.value) == message
