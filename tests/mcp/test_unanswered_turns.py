"""A record_turn its client cancels (a timeout) after the turn was stored, while memory's
update still asks the model, and the same call sent again: the exchange is stored once.
The real stdio server and the mcp SDK's ClientSession; the model's request log a FIFO that
holds the summary call until the test reads it."""

from __future__ import annotations

import asyncio
import os
import select
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from waiting import HANG

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_calls import held_server
from test_mcp_server import call

from chatmem.app import Workspace
from chatmem.config.settings import Settings
from chatmem.mcp.unanswered import ALREADY_STORED


@pytest.mark.parametrize(("user", "assistant"), [
    ("My cat is called Tom. " * 3000, "Noted."),
    ("我们五月去杭州，住在西湖边。" * 8000, "好的。"),
])
def test_a_turn_sent_again_after_its_call_was_cancelled_once_stored_is_stored_once(
        tmp_path: Path, user: str, assistant: str) -> None:
    params, reader, keeper = held_server(tmp_path)

    async def run() -> tuple[int, dict[str, Any], dict[str, Any]]:
        async with stdio_client(params) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            await call(session, "start_conversation", name="猫", strategy="summary")
            async with anyio.create_task_group() as tg:
                async def record() -> None:
                    await session.call_tool("record_turn", {
                        "conversation_id": "猫", "user": user, "assistant": assistant})
                tg.start_soon(record)
                # The turn is stored and its summary asks the model: the client gives up.
                await anyio.to_thread.run_sync(os.read, reader, 1)
                tg.cancel_scope.cancel()  # the SDK sends notifications/cancelled

            drained.start()  # the model goes on, and is read from now on
            listed = await call(session, "list_conversations")
            again = await call(session, "record_turn", conversation_id="猫", user=user,
                               assistant=assistant)
            following = await call(session, "record_turn", conversation_id="猫",
                                   user="And the dog?", assistant="Rex.")
            return listed["conversations"][0]["turns"], again, following

    done = threading.Event()

    def drain() -> None:
        while not done.is_set():  # the write end kept open: never at its end
            if select.select([reader], [], [], 0.05)[0]:
                os.read(reader, 65536)

    drained = threading.Thread(target=drain, daemon=True)
    try:
        turns_before, again, following = asyncio.run(asyncio.wait_for(run(), HANG))
    finally:
        done.set()
        if drained.is_alive():
            drained.join(HANG)
        os.close(reader)
        os.close(keeper)
    assert turns_before == 1  # stored before the client gave up on the call
    assert again["turn"] == 1
    assert ALREADY_STORED.format(turn=1) in again["notices"]
    assert following["turn"] == 2
    with Workspace(Settings(db=str(tmp_path / "h.db"), provider="scripted")) as ws:
        session = ws.store.sessions.session("猫")
        texts = [m.content for m in ws.store.history.messages(session.id)]
    assert texts == [user, assistant, "And the dog?", "Rex."]


def test_the_same_exchange_recorded_twice_by_answered_calls_is_two_turns(
        tmp_path: Path) -> None:
    # Only a cancelled call's turn is taken for the one sent again: "yes" twice is two turns.
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chatmem", "mcp", "--db", str(tmp_path / "h.db"), "--provider",
              "scripted"],
        env=dict(os.environ))

    async def run() -> list[dict[str, Any]]:
        async with stdio_client(params) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            await call(session, "start_conversation", name="yes")
            return [await call(session, "record_turn", conversation_id="yes", user="是的",
                               assistant="好。") for _ in range(2)]

    first, second = asyncio.run(asyncio.wait_for(run(), HANG))
    assert (first["turn"], second["turn"]) == (1, 2)
    assert not second["notices"]
