"""The context resource reads a strategy spec as typed, through the real stdio server and
the mcp client library."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from mcp import ClientSession
from test_mcp_server import call, with_client


def test_a_strategy_spec_with_commas_is_read_as_typed(tmp_path: Path) -> None:
    async def work(session: ClientSession) -> list[dict[str, Any]]:
        await call(session, "start_conversation", name="旅行")
        await call(session, "record_turn", conversation_id="旅行", user="我们五月去杭州。",
                   assistant="好的。")
        read = []
        for spec in ("summary-buffer:max_tokens=1000,prune_to=0.4",
                     "retrieval:mode=bm25,recent=2", "summary-buffer%3Amax_tokens%3D900",
                     "current"):
            got = await session.read_resource(f"chatmem://conversations/旅行/context/{spec}")
            read.append(json.loads(got.contents[0].text))  # type: ignore[union-attr]
        return read

    labels = [seen["strategy"]["label"] for seen in with_client(tmp_path / "h.db", work)]
    assert "max_tokens=1000" in labels[0] and "prune_to=0.4" in labels[0]
    assert "mode=bm25" in labels[1] and "recent=2" in labels[1]
    assert labels[2].startswith("summary-buffer max_tokens=900")  # percent-encoded still works
    assert labels[3].startswith("window")
