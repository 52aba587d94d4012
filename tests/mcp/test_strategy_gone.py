"""An MCP client whose conversation's plugin strategy is no longer installed: told how to go
on in MCP's own terms, and goes on by naming another strategy to start_conversation."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from plugin_site import PINNED, install, readme_files
from waiting import HANG

from chatmem.store import Store

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def run_server(db: Path, site: Path | None, calls: list[tuple[str, dict[str, Any]]], *,
               provider: str = "scripted", env: dict[str, str] | None = None,
               ) -> list[tuple[bool, Any]]:
    """Make `calls` in order with a client of `chatmem mcp --provider PROVIDER` (and `env`)
    whose Python finds the plugins in `site` (none: not installed); each (is_error,
    structured content or text)."""
    path = [str(site)] if site else []
    env = {**os.environ, **(env or {}),
           "PYTHONPATH": os.pathsep.join([*path, *filter(None, [os.environ.get("PYTHONPATH")])])}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chatmem", "mcp", "--db", str(db), "--provider", provider], env=env)

    async def work() -> list[tuple[bool, Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            answers = []
            for tool, arguments in calls:
                result = await session.call_tool(tool, arguments)
                answers.append((result.is_error, result.structured_content
                                if not result.is_error else result.content[0].text))  # type: ignore[union-attr]
            return answers

    return asyncio.run(asyncio.wait_for(work(), HANG))


def test_a_conversation_whose_plugin_strategy_is_gone_goes_on_with_another_one_named(
        tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "chatmem-anchor", "chatmem_anchor", readme_files()["chatmem_anchor.py"])
    db = tmp_path / "h.db"
    run_server(db, site, [
        ("start_conversation", {"name": "日记", "strategy": "anchor:k=2"}),
        ("record_turn", {"conversation_id": "日记", "user": "今天很好", "assistant": "记下了"})])

    refused, started, recorded, again = run_server(db, None, [  # chatmem-anchor uninstalled
        ("record_turn", {"conversation_id": "日记", "user": "卸载后的重要一句",
                         "assistant": "好的"}),
        ("start_conversation", {"name": "日记", "strategy": "window"}),
        ("record_turn", {"conversation_id": "日记", "user": "卸载后的重要一句",
                         "assistant": "好的"}),
        ("start_conversation", {"name": "日记"})])

    assert refused[0] is True
    assert "no installed plugin provides now" in refused[1] and "-s NAME" not in refused[1]
    assert "start_conversation with a strategy" in refused[1]
    assert "MODEL@STRATEGY" not in refused[1]  # the OpenAI API's way on, not an MCP client's
    assert started == (False, {"conversation_id": "日记", "created": False, "turns": 1,
                               "strategy": "window k=5", "notices": [
                                   "conversation 日记: strategy anchor head=1 k=2 → window k=5"]})
    assert recorded[0] is False and recorded[1]["turn"] == 2
    assert again[1]["strategy"] == "window k=5"  # kept: the conversation's own from now on
    with Store(db) as store:
        session = store.sessions.session("日记")
        assert [m.content for m in store.history.messages(session.id)] == [
            "今天很好", "记下了", "卸载后的重要一句", "好的"]


def test_a_conversation_saved_by_an_older_plugin_version_tells_the_client_what_was_left_out(
        tmp_path: Path) -> None:
    """The CLI and the REPL said so; an MCP client was told nothing."""
    db = tmp_path / "h.db"
    install(tmp_path / "v1", "chatmem-pinned", "chatmem_pinned", PINNED.format(
        fields='    loud: bool = param(False, "say it loudly")\n'
               '    n: int = param(3, "how many", minimum=0)'))
    run_server(db, tmp_path / "v1", [
        ("start_conversation", {"name": "旅行", "strategy": "pinned:note=带伞,loud=true,n=3"}),
        ("record_turn", {"conversation_id": "旅行", "user": "我们去杭州", "assistant": "好的"})])
    install(tmp_path / "v2", "chatmem-pinned", "chatmem_pinned", PINNED.format(
        fields='    n: int = param(6, "how many", minimum=5)'), version="0.2.0")

    started, recorded, again, context = run_server(db, tmp_path / "v2", [
        ("start_conversation", {"name": "旅行"}),
        ("record_turn", {"conversation_id": "旅行", "user": "带伞了吗", "assistant": "带了"}),
        ("record_turn", {"conversation_id": "旅行", "user": "还有呢", "assistant": "没了"}),
        ("get_context", {"conversation_id": "旅行", "input": "下一句"})])

    said = ("conversation 旅行 was saved by another version of strategy pinned; left out "
            "loud=True (no longer a parameter of it), n=3 (refused now: the default is used)")
    assert started == (False, {"conversation_id": "旅行", "created": False, "turns": 1,
                               "strategy": "pinned note=带伞 n=6", "notices": [said]})
    # The call that opened the conversation is told, once: not every later call.
    assert recorded[0] is False and recorded[1]["notices"] == [said]
    assert again[0] is False and again[1]["turn"] == 3 and again[1]["notices"] == []
    assert context[0] is False and context[1]["notices"] == [said]
