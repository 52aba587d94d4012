"""The checks a strategy's context passes before it is sent (chatmem.memory.guards)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from listed_history import ListHistory, scratch_state
from registered import create_strategy

from chatmem.memory.base import ContextRequest
from chatmem.memory.context import Context, Message
from chatmem.memory.guards import wrong_context
from chatmem.tokens import counter_for_model

COUNTER = counter_for_model(None, exact=True)


def built(texts: list[str]) -> tuple[Context, ContextRequest]:
    messages = [Message("user" if i % 2 == 0 else "assistant", text, 5, i + 1)
                for i, text in enumerate(texts)]
    request = ContextRequest(history=ListHistory.from_messages(messages),
                             input=Message("user", "last", 5), counter=COUNTER,
                             state=scratch_state())
    return create_strategy("buffer").build(request), request


def python_calls(action: Callable[[], object]) -> list[str]:
    names: list[str] = []

    def seen(frame, event: str, arg: object) -> None:  # type: ignore[no-untyped-def]
        if event == "call":
            names.append(frame.f_code.co_name)

    sys.setprofile(seen)
    try:
        action()
    finally:
        sys.setprofile(None)
    return names


@pytest.mark.parametrize("texts", [
    [f"question {i} about the order" for i in range(40)],
    [f"第{i}个问题：订单" if i % 2 == 0 else f"answer {i}" for i in range(40)],
])
def test_a_context_s_ascii_text_is_checked_and_sent_without_a_call_a_message(
    texts: list[str],
) -> None:
    # perf67: each message cost is_valid (ASCII known by isascii alone) and `sent` (text
    # dated by no line) a Python call, some seventy of each a retrieval turn.
    context, request = built(texts)
    checked = python_calls(lambda: wrong_context(context, request))
    sent = python_calls(context.messages)
    non_ascii = sum(not t.isascii() for t in texts)
    assert checked.count("is_valid") == non_ascii
    assert "sent" not in sent
    assert [m["content"] for m in context.messages()] == [*texts, "last"]


def test_a_message_that_is_not_utf8_is_still_refused() -> None:
    context, request = built(["fine", "half an emoji \ud83d", "好"])
    assert "not UTF-8" in (wrong_context(context, request) or "")
