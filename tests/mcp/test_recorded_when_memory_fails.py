"""record_turn stores the exchange its client already had even when the conversation's
strategy fails to build a context (a plugin's): the failure is one notice of the call, and
the turn's messages are in the history (plugin64: turns 5 then 6 with nothing between)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_calls import mcp_calls
from plugin_site import BUILD_FAILS, install

from chatmem.store import Store

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")


def test_an_exchange_is_stored_when_its_strategy_fails_to_build(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "chatmemtest-boom", "chatmemtest_boom", BUILD_FAILS, name="boom")
    db = tmp_path / "h.db"
    _, first, second = mcp_calls(["--db", str(db)], [
        ("start_conversation", {"name": "订单", "strategy": "boom"}),
        ("record_turn", {"conversation_id": "订单", "user": "我的订单号是 ZX-1001",
                         "assistant": "记下了"}),
        ("record_turn", {"conversation_id": "订单", "user": "几号发货？",
                         "assistant": "三月十五日"})], site=site)
    assert (first["turn"], second["turn"]) == (1, 2)
    [notice] = second["notices"]
    assert "strategy 'boom'" in notice and "RuntimeError: 上下文炸了" in notice
    assert "chatmemtest-boom" in notice  # the plugin to tell
    with Store(db) as store:
        session = store.sessions.session("订单")
        assert [m.content for m in store.history.messages(session.id)] == [
            "我的订单号是 ZX-1001", "记下了", "几号发货？", "三月十五日"]
