"""`chatmem mcp` over stdio answers every request, whatever text its JSON spells.

The mcp client library cannot send a lone surrogate (pydantic refuses to write one), but
a client in another language can: these tests speak JSON-RPC lines to the real server
process, as such a client does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from waiting import Watched

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")


class LineClient:
    """A JSON-RPC client over the server's stdin and stdout, one JSON text a line."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "chatmem", "mcp", "--db", str(db), "--provider",
             "scripted"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=dict(os.environ))
        self.said = Watched(self.process.stdout)  # type: ignore[arg-type]
        self.last_id = 0

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request (its JSON as Python writes it: ensure_ascii, so a lone surrogate
        goes as the escape "\\ud800") and wait for the answer with its id."""
        self.last_id += 1
        asked = self.last_id
        self.send(json.dumps({"jsonrpc": "2.0", "id": asked, "method": method,
                              "params": params}))
        def answer(text: str) -> dict[str, Any] | None:
            whole_lines = text.split("\n")[:-1]  # the last may still be arriving
            return next((a for a in map(json.loads, whole_lines) if a.get("id") == asked),
                        None)

        text = self.said.wait_for(lambda t: answer(t) is not None,
                                  f"an answer to request {asked}")
        return answer(text)  # type: ignore[return-value]

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})["result"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def test_a_lone_surrogate_in_a_tool_call_is_answered_and_stored_as_a_replacement_character(
        tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    client = LineClient(db)
    try:
        client.request("initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                      "clientInfo": {"name": "test", "version": "1"}})
        client.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        client.call("start_conversation", name="代理")
        recorded = client.call("record_turn", conversation_id="代理", user="用户 \ud800 说",
                               assistant="回复 \udfff 😀")
        found = client.call("search_memory", conversation_id="代理", query="查询 \ud800")
        remembered = client.call("remember", conversation_id="代理", fact="名字: \ud800李")
    finally:
        client.close()
    assert recorded["structuredContent"]["turn"] == 1
    assert "hits" in found["structuredContent"]
    assert remembered["structuredContent"]["facts"][0]["value"] == "\ufffd李"
    shown = subprocess.run([sys.executable, "-m", "chatmem", "sessions", "show", "代理", "--all",
                            "--json", "--db", str(db)], capture_output=True, text=True,
                           encoding="utf-8", check=True)
    # A whole pair (😀, sent as two escapes) is the character it spells.
    assert [m["content"] for m in json.loads(shown.stdout)["messages"]] == [
        "用户 \ufffd 说", "回复 \ufffd 😀"]


def test_mending_leaves_every_other_line_as_it_came() -> None:
    from chatmem.mcp.stdio import mended

    for line in (b'{"a": "\\ud83d\\ude00"}\n', b'{"a": "\\\\ud800"}\n', b'not json \\ud800\n',
                 '{"a": "中文"}\r\n'.encode()):
        assert mended(line) == line
    assert mended(b'{"a": ["\\ud800", {"\\udc00": 1}]}\r\n') == \
        '{"a": ["\ufffd", {"\ufffd": 1}]}\r\n'.encode()
