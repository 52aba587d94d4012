"""A streamed turn of `chatmem serve` as OpenAI's stream of chunks: the events a turn's
thread puts on its queue (serve.turn) read on the event loop and written as SSE."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from chatmem.serve.answers import (
    Unstored,
    error_json,
    finish_reason,
    sse_event,
    unstored_field,
    usage_json,
)

if TYPE_CHECKING:
    import threading

    from chatmem.config.settings import Settings
    from chatmem.engine import TurnResult
    from chatmem.serve.requests import TurnAsked


class StreamedTurn(Protocol):
    """What `sse` reads of a turn (serve.turn.Turn), which imports this module: named here,
    not imported back."""

    settings: Settings
    asked: TurnAsked
    result: TurnResult | None
    turn_id: str
    gone: threading.Event

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]: ...

    async def next_event(self) -> object: ...

DONE = object()
ANSWERING = object()
"""The model's server took the request and is answering, before any text (a reasoning model
thinking): a streamed response's status and headers go out then."""
KEEPALIVE_S = 15.0
"""Seconds a streamed response goes without a byte before it sends an SSE comment: a model
thinking for minutes before its first word left it silent, and proxies (nginx's 60 s read
timeout) and clients' idle timers closed it. The interval the SSE standard suggests."""
KEEPALIVE = ": keepalive\n\n"
"""An SSE comment: every client's parser skips it (OpenAI's SDKs, EventSource)."""


async def sse(turn: StreamedTurn, first: object) -> AsyncIterator[str]:
    """The reply as OpenAI's stream of chunks, then the chatmem turn and [DONE]. Begun
    before the reply's first word (ANSWERING), it can no longer answer with an error's
    status: an error is an `error` event then, as OpenAI's and vLLM's streams send one,
    which the openai SDKs raise as an APIError."""
    import anyio

    event = first
    try:
        yield sse_event(turn.chunk({"role": "assistant", "content": ""}))
        while True:
            if event is ANSWERING:
                with anyio.move_on_after(KEEPALIVE_S) as waited:
                    event = await turn.next_event()
                if waited.cancelled_caught:
                    yield KEEPALIVE  # still thinking
                continue
            if event is DONE:
                break
            if isinstance(event, BaseException):
                yield sse_event(error_json(event, turn.settings))
                yield "data: [DONE]\n\n"
                return
            if isinstance(event, Unstored):
                # Every piece was sent: it ends as a reply, not as an error to retry.
                end = turn.chunk({}, finish="stop")
                end["chatmem"] = unstored_field(event, turn.settings)
                yield sse_event(end)
                if turn.asked.include_usage and event.usage is not None:
                    yield sse_event({**turn.chunk({}), "choices": [], "usage": event.usage})
                yield "data: [DONE]\n\n"
                return
            if isinstance(event, tuple) and event[0] == "delta":
                yield sse_event(turn.chunk({"content": event[1]}))
            event = await turn.next_event()
        result = turn.result
        assert result is not None
        end = turn.chunk({}, finish=finish_reason(result))
        end["chatmem"] = {"turn": turn.turn_id, "status": str(result.status)}
        yield sse_event(end)
        if turn.asked.include_usage:
            # As OpenAI sends it: a chunk of its own, without choices, that clients
            # look for by its empty `choices`.
            yield sse_event({**turn.chunk({}), "choices": [], "usage": usage_json(result)})
        yield "data: [DONE]\n\n"
    finally:
        turn.gone.set()  # a client that left mid-reply cancels the rest

