"""get_context is what an MCP client sends its model: on a fork (or an import) that holds
none of its strategy's memory yet, it is built with the memory the turn's catch-up makes
first, as `inspect --next` shows it, not without it."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import NOTED, Install

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from test_strategy_gone import run_server

from chatmem.store import Store


def _forked(installed: Install, tmp_path: Path, strategy: str, code: str) -> Path:
    """The database of a fork 分支 at turn 2 of a three-turn chat 旅行 under the plugin
    strategy `strategy` (installed from `code`), which the fork holds none of yet."""
    installed(f"chatmem-{strategy}", f"chatmem_{strategy}", code, name=strategy)
    db = tmp_path / "h.db"
    invoke("chat", "旅行", "-s", strategy, "--provider", "scripted", "--db", str(db),
           input="我想去杭州\n住三晚\n带上小明\n", code=0)
    invoke("sessions", "fork", "旅行", "分支", "--at-turn", "2", "--db", str(db), code=0)
    return db


def test_get_context_on_a_fork_sends_the_memory_its_first_turn_rebuilds(
        installed: Install, tmp_path: Path) -> None:
    db = _forked(installed, tmp_path, "noted", NOTED)
    [(failed, seen)] = run_server(db, tmp_path / "site", [
        ("get_context", {"conversation_id": "分支", "input": "还记得吗"})])
    assert failed is False
    notes = [m["content"] for p in seen["parts"] if p["kind"] == "facts" for m in p["messages"]]
    assert notes == ["noted: 我想去杭州、住三晚"]
    with Store(db) as store:  # read, not written: the turn's own catch-up stores it
        assert store.memory.strategy_state(store.sessions.session("分支").id, "noted") == {}


STEPS = """
from chatmem.memory.buffer import BufferStrategy


class Steps(BufferStrategy):
    name = "steps"
    description = "one step per turn, every turn on a catch-up, as the README asks"
    keeps_state = True

    def update(self, env):
        last = env.history.turn_count()
        said = [] if env.catch_up else list(env.state.get(self.name).get("said", []))
        turns = env.history.turns(1 if env.catch_up else last, last)
        said += [m.content for t in turns for m in t.messages if m.role == "user"]
        env.state.set(self.name, said=said)
        return []


def register(plugins):
    plugins.add_strategy(Steps)
"""


def test_record_turn_on_a_fork_first_catches_its_strategy_up(
        installed: Install, tmp_path: Path) -> None:
    """record_turn updated a fork's memory one step, never catching up: a plugin doing one
    step per turn (as the README allows unless env.catch_up) lost the fork's turns for good."""
    db = _forked(installed, tmp_path, "steps", STEPS)
    [(failed, _)] = run_server(db, tmp_path / "site", [
        ("record_turn", {"conversation_id": "分支", "user": "还记得吗", "assistant": "记得"})])
    assert failed is False
    with Store(db) as store:
        state = store.memory.strategy_state(store.sessions.session("分支").id, "steps")
    assert state["said"] == ["我想去杭州", "住三晚", "还记得吗"]
