"""A long tool call (compare_strategies' replay) through the real stdio server and the mcp
SDK's ClientSession: progress for a client that asked for it, and a call the client
cancels stops at the next step instead of replaying to the end."""

from __future__ import annotations

import asyncio
import os
import sys
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
from chatmem.app.conversations import record_on, recording_engine
from chatmem.config.settings import Settings

TURNS = 150
LONG = 1000
STRATEGIES = ["window", "summary-buffer", "retrieval"]


def seeded(tmp_path: Path, turns: int = TURNS) -> Path:
    db = tmp_path / "h.db"
    with Workspace(Settings(db=str(db), provider="scripted"), create=True) as ws:
        engine = recording_engine(ws, "旅行")
        try:
            for n in range(turns):
                record_on(engine, f"第{n}天我们去了杭州的景点{n}号", f"好的，记下了第{n}天。")
        finally:
            engine.finish()
    return db


def server(db: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "chatmem", "mcp", "--db", str(db), "--provider", "scripted"],
        env=dict(os.environ))


def test_progress_rises_to_the_whole_for_a_client_that_asked(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    seen: list[tuple[float, float | None]] = []

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async def run() -> dict[str, Any]:
        async with stdio_client(server(db)) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(
                "compare_strategies", {"conversation_id": "旅行",
                                       "strategies": STRATEGIES[:2]},
                progress_callback=progressed)
            assert result.structured_content is not None
            return result.structured_content

    compared = asyncio.run(asyncio.wait_for(run(), HANG))
    assert [s["turns"] for s in compared["strategies"]] == [TURNS, TURNS]
    assert seen, "no progress came back"
    whole = seen[-1][1]
    assert whole is not None and seen[-1][0] == whole
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)  # only ever rising
    assert {t for _, t in seen} == {whole}


EXITS_BY_ITSELF = (
    "import atexit, runpy, sys\n"
    "marker = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(marker, 'w').write('by itself'))\n"
    "sys.argv[0] = 'chatmem'\n"
    "runpy.run_module('chatmem', run_name='__main__')\n")
"""`chatmem mcp` that leaves a mark when it ends by itself: not when the client, whose
stdin closed and who waited PROCESS_TERMINATION_TIMEOUT for it, kills it."""


def test_a_what_if_tells_its_copy_and_rebuild_as_progress(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    seen: list[tuple[float, str | None]] = []

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async def run() -> dict[str, Any]:
        async with stdio_client(server(db)) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(
                "get_context", {"conversation_id": "旅行", "strategy": "summary"},
                progress_callback=progressed)
            assert result.structured_content is not None
            return result.structured_content

    seen_context = asyncio.run(asyncio.wait_for(run(), HANG))
    assert seen_context["strategy"].startswith("summary")
    assert [p for p, _ in seen] == list(range(1, len(seen) + 1))
    assert any((m or "").startswith("copying turns") for _, m in seen)
    assert any((m or "").startswith("summarizing") for _, m in seen)


def test_a_cancelled_comparison_stops_at_the_next_step(tmp_path: Path) -> None:
    # Long enough that the whole call outlasts the client's grace many times over.
    db = seeded(tmp_path, LONG)
    marker = tmp_path / "ended"
    params = server(db)
    params.args = ["-c", EXITS_BY_ITSELF, str(marker), *params.args[2:]]
    seen: list[float] = []
    first = anyio.Event()

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)
        first.set()

    async def run() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            async with anyio.create_task_group() as tg:
                async def compare() -> None:
                    await session.call_tool(
                        "compare_strategies", {"conversation_id": "旅行",
                                               "strategies": STRATEGIES},
                        progress_callback=progressed)
                tg.start_soon(compare)
                await first.wait()
                tg.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            # The server still answers, its history open.
            return await call(session, "list_conversations")

    listed = asyncio.run(asyncio.wait_for(run(), HANG))
    assert [c["turns"] for c in listed["conversations"]] == [LONG]
    assert seen and max(seen) < len(STRATEGIES) * LONG
    # Its stdin closed, the server waits for the calls in flight: the cancelled replay had
    # stopped, so it ended by itself within the client's grace rather than being killed
    # while it replayed the other 3×150 steps for nobody.
    assert marker.read_text() == "by itself"


def test_a_record_turn_cancelled_while_it_waits_for_the_conversation_stores_nothing(
        tmp_path: Path) -> None:
    # The model's request log is a FIFO that nobody drains: the first turn's summary call
    # blocks writing its (larger than a pipe) log entry until the test reads it all.
    params, reader, keeper = held_server(tmp_path)
    long = "我们五月去杭州，住在西湖边。" * 8000
    queued = anyio.Event()

    async def progressed(progress: float, total: float | None, message: str | None) -> None:
        queued.set()

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with stdio_client(params) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            await call(session, "start_conversation", name="旅行", strategy="summary")
            async with anyio.create_task_group() as tg:
                first: dict[str, Any] = {}

                async def record_first() -> None:
                    first.update(await call(session, "record_turn", conversation_id="旅行",
                                            user=long, assistant="好的。"))
                tg.start_soon(record_first)
                await anyio.to_thread.run_sync(os.read, reader, 1)  # the model is called

                async with anyio.create_task_group() as second:
                    async def record_second() -> None:
                        await session.call_tool(
                            "record_turn", {"conversation_id": "旅行", "user": "预算三千元",
                                            "assistant": "记下了。"},
                            progress_callback=progressed)
                    second.start_soon(record_second)
                    await queued.wait()  # the server says it waits behind the first
                    second.cancel_scope.cancel()

                def drain() -> None:
                    os.close(keeper)
                    while os.read(reader, 65536):
                        pass
                tg.start_soon(anyio.to_thread.run_sync, drain)
            listed = await call(session, "list_conversations")
            return first, listed

    try:
        first, listed = asyncio.run(asyncio.wait_for(run(), HANG))
    finally:
        os.close(reader)
    assert first["turn"] == 1
    # The cancelled second turn was never stored: a retry records it once.
    assert [c["turns"] for c in listed["conversations"]] == [1]
