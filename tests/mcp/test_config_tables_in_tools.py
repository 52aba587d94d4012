"""The config's [strategies.NAME] table in the MCP what-ifs (get_context with a strategy,
compare_strategies, the context resource), through the real stdio server and the mcp client
library: the same name builds the strategy start_conversation builds."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from waiting import HANG

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from test_mcp_server import call


def test_what_ifs_take_the_configs_table_as_start_conversation_does(tmp_path: Path) -> None:
    config = tmp_path / "配置.toml"
    config.write_text('provider = "scripted"\n\n[strategies.window]\nk = 2\n', encoding="utf-8")
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chatmem", "mcp", "--db", str(tmp_path / "h.db"), "--config", str(config)],
        env=dict(os.environ))

    async def work(session: ClientSession) -> list[Any]:
        started = await call(session, "start_conversation", name="新的", strategy="window")
        await call(session, "start_conversation", name="旅行", strategy="buffer")
        for user in ("我们五月去杭州", "住在西湖边", "预算三千元"):
            await call(session, "record_turn", conversation_id="旅行", user=user,
                       assistant="好的。")
        asked = await call(session, "get_context", conversation_id="旅行", strategy="window",
                           input="还有什么")
        given = await call(session, "get_context", conversation_id="旅行",
                           strategy="window:k=3")
        compared = await call(session, "compare_strategies", conversation_id="旅行",
                              strategies=["window", "window+entity", "window:k=3"])
        read = await session.read_resource("chatmem://conversations/旅行/context/window")
        resource = json.loads(read.contents[0].text)  # type: ignore[union-attr]
        return [started["strategy"], asked, given["strategy"],
                [s["strategy"] for s in compared["strategies"]],
                resource["strategy"]["params"]]

    async def run() -> list[Any]:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    started, asked, given, compared, resource = asyncio.run(asyncio.wait_for(run(), HANG))
    assert started == "window k=2"
    assert asked["strategy"] == "window k=2"
    history = next(p for p in asked["parts"] if p["kind"] == "history")
    assert [m["content"] for m in history["messages"] if m["role"] == "user"] == [
        "住在西湖边", "预算三千元"]
    assert given == "window k=3"
    assert compared == ["window k=2", "window+entity window.k=2", "window k=3"]
    assert resource == {"k": 2}
