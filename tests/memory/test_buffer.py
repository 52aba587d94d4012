"""`buffer`: every message."""

from __future__ import annotations

import pytest
from listed_history import ListHistory, scratch_state
from registered import create_strategy

from chatmem.errors import StrategyError
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import Message
from chatmem.memory.reasons import AllTurns
from chatmem.tokens import counter_for_model

COUNTER = counter_for_model(None, exact=True)


def test_sends_every_message_in_order() -> None:
    messages = []
    for n in range(1, 31):
        messages += [Message("user", f"q{n} 问题", 5, 2 * n - 1),
                     Message("assistant", f"a{n}", 4, 2 * n)]
    req = ContextRequest(history=ListHistory.from_messages(messages),
                         input=Message("user", "last", 5), counter=COUNTER,
                         state=scratch_state())
    context = create_strategy("buffer").build(req)
    assert context.messages()[:-1] == [m.as_chat() for m in messages]
    part = context.part("history")
    assert part is not None and part.reason == AllTurns("buffer", (1, 30))
    assert context.tokens == 3 + 30 * 9 + 5


def test_empty_history_is_input_only() -> None:
    req = ContextRequest(history=ListHistory(), input=Message("user", "hi", 5), counter=COUNTER,
                         state=scratch_state())
    context = create_strategy("buffer").build(req)
    assert context.messages() == [{"role": "user", "content": "hi"}]


def test_buffer_has_no_parameters() -> None:
    with pytest.raises(StrategyError) as caught:
        create_strategy("buffer", {"k": "3"})
    assert str(caught.value) == "unknown parameter 'k' for strategy 'buffer' (valid: none)"
