"""`chatmem mcp` over an encrypted history whose key comes from key_command, after a
`chatmem rekey` between two calls: the server ran key_command once and kept its key."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from pathlib import Path

import pytest
from conftest import needs_sqlcipher
from waiting import HANG

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from chatmem.app.privacy import rekey_file
from chatmem.store import Store

pytestmark = needs_sqlcipher
KEY, NEW = "mcp 钥匙 5530", "新的钥匙 9902"


def test_after_a_rekey_the_server_runs_key_command_again(tmp_path: Path) -> None:
    """The key kept from the first call no longer opened the file: every call after the
    rekey said 'wrong key' until the client app restarted the server, though key_command
    printed the new key."""
    db, key_file, runs = tmp_path / "h.db", tmp_path / "key", tmp_path / "runs"
    with Store(db, key=KEY) as store:
        store.sessions.create_session("旅行", "window")
    key_file.write_text(KEY, encoding="utf-8")
    printing = (f"import sys; open({str(runs)!r}, 'a').write('run\\n');"
                f" sys.stdout.write(open({str(key_file)!r}, encoding='utf-8').read())")
    config = tmp_path / "config.toml"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(printing)}"
    config.write_text(f"key_command = '''{command}'''\n", encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chatmem", "mcp", "--db", str(db), "--provider",
                                      "scripted", "--config", str(config)],
        env={k: v for k, v in os.environ.items() if k != "CHATMEM_KEY"})

    async def listed(session: ClientSession) -> list[str]:
        result = await session.call_tool("list_conversations", {})
        assert not result.is_error, result.content
        assert result.structured_content is not None
        return [c["conversation_id"] for c in result.structured_content["conversations"]]

    async def run() -> tuple[list[str], list[str]]:
        async with stdio_client(params) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            before = await listed(session)
            rekey_file(db, KEY, NEW)
            key_file.write_text(NEW, encoding="utf-8")
            return before, await listed(session)

    before, after = asyncio.run(asyncio.wait_for(run(), HANG))
    assert before == after == ["旅行"]
    assert runs.read_text() == "run\nrun\n"  # once, and once again after the rekey
