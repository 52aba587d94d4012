"""The proxy over a plugin strategy that keeps state: a regenerate or an edit of the last
message never replaces a turn that state covers (it would keep what the replaced turn
said); the request is a turn of its own, as after a summary (chatmem.store.state_coverage)."""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_site import LEDGER, Install

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from starlette.testclient import TestClient

from chatmem.config.settings import Settings
from chatmem.serve.proxy import build_app
from chatmem.store import Store


def test_a_regenerate_of_a_turn_a_plugin_state_covers_is_a_turn_of_its_own(
        installed: Install, tmp_path: Path) -> None:
    installed("chatmem-ledger", "chatmem_ledger", LEDGER, name="ledger")
    db = tmp_path / "h.db"
    app = build_app(Settings(provider="scripted", db=str(db)), strategy="ledger")
    with TestClient(app) as http:
        def ask(messages: list[dict[str, str]]) -> str:
            answered = http.post("/v1/chat/completions",
                                 headers={"X-Chatmem-Conversation": "shop"},
                                 json={"model": "scripted", "messages": messages})
            assert answered.status_code == 200, answered.text
            return str(answered.json()["choices"][0]["message"]["content"])

        first = [{"role": "user", "content": "第一 111"}]
        prior = [*first, {"role": "assistant", "content": ask(first)}]
        for sent in ("价格 5555", "价格 5555", "价格 6666"):  # asked, regenerated, edited
            ask([*prior, {"role": "user", "content": sent}])
    with Store(db) as store:
        session = store.sessions.session("shop")
        replaced = [t.superseded_by for t in store.turns.turns(session.id)]
        said = [m.content for m in store.history.messages(session.id) if m.role == "user"]
        ledger = store.memory.strategy_state(session.id, "ledger")["items"]
    assert replaced == [None, None, None, None]
    assert said == ["第一 111", "价格 5555", "价格 5555", "价格 6666"]
    assert ledger == ["1:111", "2:5555", "3:5555", "4:6666"]
