"""`mcp --http` ending its event streams itself once no call is under way (mcp/draining.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from sse_starlette.sse import AppStatus, EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route
from starlette.testclient import TestClient
from waiting import wait_until

from chatmem.mcp.draining import CallsFinishFirst


@pytest.fixture
def flags_kept() -> Iterator[None]:
    """sse-starlette's process-wide flags as they were, whatever the test left."""
    was = AppStatus.should_exit, AppStatus.enable_automatic_graceful_drain
    try:
        yield
    finally:
        AppStatus.should_exit, AppStatus.enable_automatic_graceful_drain = was


def _events_sent() -> int:
    """How many of three events a fresh event-stream app of this process sends."""

    async def three() -> AsyncIterator[dict[str, str]]:
        for n in range(3):
            yield {"data": str(n)}

    def stream(_: Request) -> EventSourceResponse:
        return EventSourceResponse(three())

    with TestClient(Starlette(routes=[Route("/", stream)])) as client:
        return client.get("/").text.count("data:")


@pytest.mark.usefixtures("flags_kept")
def test_a_server_that_stopped_leaves_a_later_one_s_streams_whole() -> None:
    """Found reading clients70's drain: told to stop, the server set sse-starlette's
    process-wide should_exit (and turned its own drain off) for good, so every event stream
    of a later server in the process (a test's, a program embedding chatmem) ended the
    moment it began: each tool call's answer lost ('SSE stream ended without a response')."""

    async def nothing(scope: object, receive: object, send: object) -> None:
        return None

    assert _events_sent() == 3
    calls = CallsFinishFirst(nothing)
    calls.stopping()
    wait_until(lambda: AppStatus.should_exit, "the streams are told to end")
    calls.ended()
    assert (AppStatus.should_exit, AppStatus.enable_automatic_graceful_drain) == (False, True)
    assert _events_sent() == 3


@pytest.mark.usefixtures("flags_kept")
def test_a_call_still_under_way_when_the_server_ended_sets_no_flag_after() -> None:
    """A server ended with a call under way (Ctrl-C twice): the thread waiting for that call
    sets nothing once the flags are put back."""

    async def nothing(scope: object, receive: object, send: object) -> None:
        return None

    calls = CallsFinishFirst(nothing)
    calls.under_way = 1
    calls.stopping()
    calls.ended()
    calls.under_way = 0
    import time

    time.sleep(0.2)
    assert AppStatus.should_exit is False
