"""One MCP client session against a real `chatmem mcp` over stdio, for tests."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waiting import HANG

if TYPE_CHECKING:
    from mcp import StdioServerParameters


def mcp_calls(args: list[str], calls: list[tuple[str, dict[str, Any]]], *,
              site: Path | None = None, errors: bool = False,
              before: Mapping[int, Callable[[], object]] | None = None
              ) -> list[dict[str, Any]]:
    """Make `calls` in order with a client of `chatmem mcp --provider scripted ARGS` (whose
    Python also finds what is in `site`): each tool call's structured result, or for a
    `chatmem://` resource `{"text": …}`. A call that errs fails the test, unless `errors`:
    then its answer is `{"error": its text}`. `before`: what to do before the call of that
    index (another process's write begun, say)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    path = [str(site)] if site else []
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([*path, *filter(None, [os.environ.get("PYTHONPATH")])])}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chatmem", "mcp", "--provider", "scripted", *args], env=env)

    async def work() -> list[dict[str, Any]]:
        # errlog given: the SDK's default is the sys.stderr of its first import (a
        # CliRunner's stream without a file descriptor, if an earlier test imported it).
        async with stdio_client(params, errlog=sys.stderr) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            answers = []
            for i, (tool, arguments) in enumerate(calls):
                if before and i in before:
                    before[i]()
                if tool.startswith("chatmem://"):
                    resource = await session.read_resource(tool)  # type: ignore[arg-type]
                    answers.append({"text": resource.contents[0].text})  # type: ignore[union-attr]
                    continue
                result = await session.call_tool(tool, arguments)
                if errors and result.is_error:
                    answers.append({"error": result.content[0].text})  # type: ignore[union-attr]
                    continue
                assert not result.is_error, result.content
                assert result.structured_content is not None
                answers.append(result.structured_content)
            return answers

    return asyncio.run(asyncio.wait_for(work(), HANG))


def held_server(tmp_path: Path) -> tuple[StdioServerParameters, int, int]:
    """A server whose model blocks writing its (larger than a pipe) request log, a FIFO,
    until the test reads it: (its parameters, the log's read end, a write end that keeps it
    open)."""
    from mcp import StdioServerParameters

    log = tmp_path / "model.log"
    os.mkfifo(log)
    config = tmp_path / "config.toml"
    config.write_text(f'provider = "scripted"\n\n[scripted]\nlog = "{log}"\n',
                      encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chatmem", "mcp", "--db", str(tmp_path / "h.db"), "--config", str(config)],
        env=dict(os.environ))
    reader = os.open(log, os.O_RDONLY | os.O_NONBLOCK)
    keeper = os.open(log, os.O_WRONLY)  # no EOF before the server writes
    os.set_blocking(reader, True)
    return params, reader, keeper
