"""Arguments that do not fit a tool's schema are refused in one line naming the argument
and what it must be, through the real stdio server and the mcp client library."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from mcp import ClientSession
from test_mcp_server import call, with_client


def test_a_wrong_argument_is_one_line_naming_it_and_what_it_must_be(tmp_path: Path) -> None:
    refused: list[tuple[str, dict[str, Any]]] = [
        ("list_conversations", {"page": 0}),
        ("forget", {"fact_id": "第一"}),
        ("explain_turn", {"conversation_id": "旅行", "turn": 1.5}),
        ("record_turn", {"conversation_id": "旅行", "user": 5}),
        ("compare_strategies", {"conversation_id": "旅行", "strategies": "window"}),
        ("remember", {"conversation_id": "旅行", "fact": "城市: 杭州", "everywhere": "也许"}),
    ]

    async def work(session: ClientSession) -> list[str]:
        await call(session, "start_conversation", name="旅行")
        said = []
        for tool, arguments in refused:
            result = await session.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            said.append(result.content[0].text)  # type: ignore[union-attr]
        return said

    said = with_client(tmp_path / "h.db", work)
    assert [line.split(": ", 1)[1] for line in said] == [
        "page must be 1 or more, not 0",
        'fact_id must be a whole number, not "第一"',
        "turn must be a whole number, not 1.5",
        "user must be text, not 5; assistant is required",
        'strategies must be a list, not "window"',
        'everywhere must be true or false, not "也许"',
    ]
    assert all("\n" not in line and "pydantic" not in line for line in said)


def test_true_or_false_is_no_whole_number(tmp_path: Path) -> None:
    """Review: pydantic reads a JSON true as 1 and false as 0 where a whole number is asked,
    so `forget` with `fact_id: true` (a model's slip for a yes/no argument beside it) and
    `confirm: true` forgot fact 1, whatever fact was meant; `turn: true` explained turn 1.
    They are refused as any other wrong type is, and nothing changes."""
    import json

    async def work(session: ClientSession) -> tuple[list[str], Any]:
        await call(session, "start_conversation", name="旅行")
        await call(session, "remember", conversation_id="旅行", fact="城市: 杭州")
        said = []
        for tool, arguments in [
                ("forget", {"fact_id": True, "confirm": True}),
                ("explain_turn", {"conversation_id": "旅行", "turn": True}),
                ("list_facts", {"page": False})]:
            result = await session.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            said.append(result.content[0].text)  # type: ignore[union-attr]
        facts = await session.call_tool("list_facts", {})
        return said, json.loads(facts.content[0].text)  # type: ignore[union-attr]

    said, facts = with_client(tmp_path / "h.db", work)
    assert [line.split(": ", 1)[1] for line in said] == [
        "fact_id must be a whole number, not true", "turn must be a whole number, not true",
        "page must be a whole number, not false"]
    assert [(f["key"], f["value"]) for f in facts["facts"]] == [("城市", "杭州")]


def test_an_argument_the_tool_does_not_take_is_refused_naming_it(tmp_path: Path) -> None:
    """Review: pydantic drops an argument a tool does not name, so `get_context` given
    `user` where it takes `input` answered with a context built for no input at all (and
    `record_turn` given `reply` for `assistant`, and so on). It is refused naming the
    argument and the ones the tool takes, and nothing is stored."""
    async def work(session: ClientSession) -> tuple[list[str], Any]:
        await call(session, "start_conversation", name="旅行")
        said = []
        for tool, arguments in [
                ("get_context", {"conversation_id": "旅行", "user": "去哪里？"}),
                ("record_turn", {"conversation_id": "旅行", "user": "你好", "assistant": "好",
                                 "用户": "x", "extra": 1})]:
            result = await session.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            said.append(result.content[0].text)  # type: ignore[union-attr]
        shown = await call(session, "get_context", conversation_id="旅行", input="去哪里？")
        return said, shown

    said, shown = with_client(tmp_path / "h.db", work)
    assert said[0].startswith("Error executing tool get_context: unknown argument user (")
    assert "conversation_id" in said[0] and "input" in said[0]
    assert said[1].startswith("Error executing tool record_turn: unknown arguments 用户, extra (")
    assert "assistant" in said[1]
    assert "你好" not in str(shown)  # the refused record_turn stored nothing
