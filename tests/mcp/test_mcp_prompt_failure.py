"""A prompt that fails to render with an error chatmem does not know (a bug, a library's):
one line of the server's log, where the SDK's dispatcher wrote its traceback."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp", reason="chatmem[mcp] is not installed")

from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR

from chatmem.mcp.arguments import ToolServer

KEY = "sk-test-PROMPT-1a2b3c4d5e6f"


def test_a_prompt_failing_while_it_renders_is_one_line_of_the_log_and_the_key_masked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    logged: list[str] = []
    server = ToolServer(name="t", log=logged.append)

    @server.prompt()
    def resume(conversation_id: str) -> str:
        raise RuntimeError(f"对话 {conversation_id} broke\nwith {KEY}")

    with pytest.raises(MCPError) as refused:
        asyncio.run(server.get_prompt("resume", {"conversation_id": "旅行"}))
    assert refused.value.code == INTERNAL_ERROR
    assert refused.value.message == ("prompt resume failed (RuntimeError); the server's log "
                                     "says where")
    [line] = logged
    assert line.startswith("prompt resume failed: RuntimeError: 对话 旅行 broke with [api key]")
    assert line.endswith(f"(at test_mcp_prompt_failure.py:{resume.__code__.co_firstlineno + 2})")
    assert refused.value.__cause__ is None and refused.value.__suppress_context__


def test_the_key_the_settings_read_from_their_own_variable_is_masked_in_that_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    # api_key_env names another variable than OPENAI_API_KEY: not the environment's key.
    from chatmem.config.settings import Settings
    from chatmem.mcp.server import build_server

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("DEEPSEEK_KEY", KEY)
    logged: list[str] = []
    server = build_server(Settings(provider="openai", api_key_env="DEEPSEEK_KEY",
                                   db=str(tmp_path / "h.db")), log=logged.append)

    @server.prompt()
    def resume(conversation_id: str) -> str:
        raise RuntimeError(f"对话 {conversation_id}: {KEY}")

    with pytest.raises(MCPError):
        asyncio.run(server.get_prompt("resume", {"conversation_id": "旅行"}))
    [line] = logged
    assert KEY not in line
    assert line.startswith("prompt resume failed: RuntimeError: 对话 旅行: [api key]")
