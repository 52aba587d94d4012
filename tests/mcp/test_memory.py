"""A chatmem error as the MCP client reads it: one line saying what happened, and not
where the history lives on the server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from test_mcp_server import with_client


def test_a_history_that_is_not_chatmems_is_named_without_its_path(
        tmp_path: Path, foreign_history: Path) -> None:
    db = foreign_history

    async def work(session: ClientSession) -> list[str]:
        said = []
        for tool, arguments in (("list_conversations", {}),
                                ("get_context", {"conversation_id": "旅行"}),
                                ("start_conversation", {"name": "旅行"})):
            result = await session.call_tool(tool, arguments)
            assert result.is_error, (tool, result)
            said.append(result.content[0].text)  # type: ignore[union-attr]
        with pytest.raises(MCPError) as refused:
            await session.read_resource("chatmem://conversations/旅行/transcript")
        return [*said, str(refused.value)]

    said = with_client(db, work)
    for line in said:
        assert line.endswith("the history is not a chatmem database (it has other tables)"), \
            line
        assert str(tmp_path) not in line and "记录.db" not in line


def test_a_history_fault_is_said_to_the_servers_log_with_its_file(
        tmp_path: Path, foreign_history: Path) -> None:
    """`chatmem serve` logs a history only its owner can mend (disk full, damaged, not
    chatmem's), naming the file; `chatmem mcp` told only the client, without the path, and
    the server's stderr, where its owner looks, said nothing."""
    db = foreign_history

    async def work(session: ClientSession) -> None:
        for tool, arguments in (("list_conversations", {}),
                                ("get_context", {"conversation_id": "旅行"})):
            assert (await session.call_tool(tool, arguments)).is_error

    errors = tmp_path / "server.err"
    with errors.open("w", encoding="utf-8") as log:
        with_client(db, work, errlog=log)
    lines = [line for line in errors.read_text(encoding="utf-8").splitlines()
             if "not a chatmem database" in line]
    assert len(lines) == 2, errors.read_text(encoding="utf-8")
    assert all(str(db) in line for line in lines), lines


def test_a_damaged_history_is_named_without_a_command_the_client_cannot_run(
        tmp_path: Path) -> None:
    """The owner's command to find the damage named the file, and with the file unnamed for
    the client it read `sqlite3 the history 'PRAGMA integrity_check'`: no command at all."""
    import sqlite3

    folder = tmp_path / "服务器的历史"
    folder.mkdir()
    whole, db = folder / "whole.db", folder / "记录.db"
    with sqlite3.connect(whole) as history:
        history.executescript("PRAGMA page_size = 1024; CREATE TABLE t (x TEXT);"
                              "INSERT INTO t SELECT hex(randomblob(300)) FROM"
                              " (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1"
                              " FROM n WHERE i < 40) SELECT i FROM n);")
    history.close()
    db.write_bytes(whole.read_bytes()[:4096])  # a history cut short: SQLite says malformed

    async def work(session: ClientSession) -> str:
        result = await session.call_tool("list_conversations", {})
        assert result.is_error
        return result.content[0].text  # type: ignore[union-attr]

    line = with_client(db, work)
    assert line.endswith("the history is damaged (database disk image is malformed): "
                         "restore it from a backup"), line
    assert "`" not in line and str(tmp_path) not in line
