"""Calls flooding one conversation of a slow model cannot hold every worker thread of the MCP
server: past a few waiting, a call is answered busy at once, and another client's calls go
on. The server in-process (the SDK's Client), the model a real HTTP server on 127.0.0.1 that
holds its answer until the test releases it (tests/chat_server.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from mcp import Client

from chatmem.config.settings import Settings
from chatmem.mcp.memory import QUEUED
from chatmem.mcp.server import build_server

FLOOD = 45
"""More calls than the SDK's 40 worker threads."""


def test_a_flood_on_one_slow_conversation_is_answered_busy_and_other_clients_go_on(
        chat_server: ChatServer, tmp_path: Path) -> None:
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(tmp_path / "h.db"))
    server = build_server(settings)

    async def record(client: Client, n: int) -> Any:
        return await client.call_tool("record_turn", {
            "conversation_id": "慢", "user": f"我住在杭州{n}号", "assistant": "好的"})

    async def run() -> tuple[list[Any], list[Any], Any, bool]:
        async with Client(server) as flooder, Client(server) as other:
            await flooder.call_tool("start_conversation", {"name": "慢", "strategy": "entity"})
            chat_server.plan = ["hang"]  # the first turn's extractor waits for the release
            first = asyncio.create_task(record(flooder, 0))
            while not chat_server.requests:
                await asyncio.sleep(0.01)
            flood = [asyncio.create_task(record(flooder, n)) for n in range(1, FLOOD + 1)]
            busy = []
            for done in asyncio.as_completed(flood):  # the busy ones, while the model holds
                busy.append(await done)
                if len(busy) == FLOOD - QUEUED:
                    break
            listed = await other.call_tool("list_conversations", {})
            held = not chat_server.release.is_set()
            chat_server.release.set()
            recorded = [await first, *[await call for call in flood if not call.done()
                                       or call.result() not in busy]]
            return busy, recorded, listed, held

    busy, recorded, listed, held = asyncio.run(asyncio.wait_for(run(), HANG))
    assert held  # all of it answered while the first call still waited for the model
    assert all(answer.is_error and "busy" in answer.content[0].text for answer in busy)
    assert not listed.is_error
    assert [r.is_error for r in recorded] == [False] * (QUEUED + 1)
    assert sorted(r.structured_content["turn"] for r in recorded) == list(range(1, QUEUED + 2))
