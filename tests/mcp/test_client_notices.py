"""What an MCP client is told beside a result reads as the CLI says it, less the advice
only a REPL user can take: a summary's released pins (no `/summary`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_calls import mcp_calls

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")


def test_released_pins_are_told_without_the_repl_command_that_lists_them(
        tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    _, _, recorded = mcp_calls(["--db", db], [
        ("start_conversation", {"name": "散步", "strategy": "summary-buffer:max_tokens=60"}),
        ("record_turn", {"conversation_id": "散步", "user": "I like long walks on the beach"
                         " near Lisbon every morning with my dog Rex", "assistant": "Lovely"}),
        ("record_turn", {"conversation_id": "散步", "user": "My order number is ORD-7731,"
                         " 我住在杭州西湖边", "assistant": "Noted"})])
    [notice] = recorded["notices"]
    assert "released to keep pins within 16 tokens: " in notice, notice
    assert "/summary" not in notice

