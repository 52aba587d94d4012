"""A plugin strategy's state in a PostgreSQL session shared for writing is each writer's,
as a built-in summary strategy's is (store.writer_state): a write share's grantee's turn
keeps his apart from the owner's, her next turn reads only the turns since her last, and
neither's state is read into the other's context."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import chat, run
from pg import Team
from plugin_site import Install

from chatmem.store import Store

pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

TALLY = '''
import json
import os

from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy
from chatmem.memory.context import Message, Part
from chatmem.memory.reasons import TextReason


class Tally(BaseStrategy):
    name = "tally"
    description = "the user lines it read, kept in state, and the input"
    keeps_state = True

    def build(self, request):
        state = request.state.get(self.name)
        seen = state.get("seen", [])
        text = "Read: " + " | ".join(seen)
        parts = [Part("facts", (Message.counted("system", text, request.counter),),
                      TextReason(f"{len(seen)} lines"))]
        return assemble(request, parts, budget=self.budget(request))

    def update(self, env):
        state = env.state.get(self.name)
        seen, read = list(state.get("seen", [])), state.get("read", 0)
        last = env.history.turn_count()
        with open(os.environ["TALLY_LOG"], "a", encoding="utf-8") as log:
            for turn in env.history.turns(read + 1, last) if last > read else []:
                log.write(json.dumps(turn.number) + "\\n")
                seen += [m.content for m in turn.messages if m.role == "user"]
        env.state.set(self.name, seen=seen, read=last)
        return []


def register(plugins):
    plugins.add_strategy(Tally)
'''


@pytest.fixture
def tally(installed: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The `tally` plugin installed; the file each update writes the turns it read to."""
    installed("chatmem-tally", "chatmem_tally", TALLY)
    log = tmp_path / "tally.log"
    monkeypatch.setenv("TALLY_LOG", str(log))
    return log


def read_turns(log: Path) -> list[int]:
    turns = [int(line) for line in log.read_text(encoding="utf-8").split()] \
        if log.exists() else []
    log.unlink(missing_ok=True)
    return turns


def tally_state(url: str, name: str) -> dict[str, object]:
    with Store(url) as store:
        return store.memory.strategy_state(store.sessions.session(name).id, "tally")


def shared_tally(team: Team, log: Path) -> tuple[str, str]:
    ann, bob = team.url("ann"), team.url("bob")
    for said in ("我叫安娜。", "José lives in Lisbon."):
        run(ann, "ask", "--session", "a", said, "--strategy", "tally",
            "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "a", "--with", "bob", "--write", code=0)
    assert read_turns(log) == [1, 2]
    return ann, bob


def test_her_next_turn_after_his_reads_only_the_turns_since(team: Team, tally: Path) -> None:
    # His turn wrote the plugin's state over hers (stamped with him): she trusted none of it
    # and her next update read her whole history again from turn 1.
    ann, bob = shared_tally(team, tally)
    run(bob, "ask", "ann/a", "鲍勃：我的电话是 555-0142。", "--provider", "scripted", code=0)
    assert read_turns(tally) == [3]  # his goes on from hers
    assert tally_state(ann, "a") == {"seen": ["我叫安娜。", "José lives in Lisbon."], "read": 2}
    run(ann, "ask", "a", "安娜：我喜欢茶。", "--provider", "scripted", code=0)
    assert read_turns(tally) == [3, 4]
    assert tally_state(ann, "a")["read"] == 4
    assert tally_state(bob, "ann/a") == {
        "seen": ["我叫安娜。", "José lives in Lisbon.", "bob: 鲍勃：我的电话是 555-0142。"],
        "read": 3}


def test_his_fork_takes_his_state_and_unsharing_drops_it(team: Team, tally: Path) -> None:
    ann, bob = shared_tally(team, tally)
    run(bob, "ask", "ann/a", "鲍勃：我住在巴黎。", "--provider", "scripted", code=0)
    run(bob, "sessions", "fork", "ann/a", "bf", code=0)
    assert tally_state(bob, "bf")["seen"] == [
        "我叫安娜。", "José lives in Lisbon.", "bob: 鲍勃：我住在巴黎。"]
    # No one reads his copy once the share is gone, and a later share starts from hers.
    run(ann, "sessions", "unshare", "a", "--with", "bob", code=0)
    assert team.rows("SELECT strategy FROM strategy_state"
                     " WHERE starts_with(strategy, 'tally/')") == []
    run(ann, "ask", "a", "安娜：我喜欢茶。", "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "a", "--with", "bob", code=0)
    assert tally_state(bob, "ann/a")["read"] == 4


@pytest.mark.parametrize("name", ["José", "张三"])
def test_her_purge_leaves_no_copy_of_the_value_in_his_state(
        team: Team, tally: Path, name: str) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "--session", "a", f"My friend is {name}.", "--strategy", "tally",
        "--provider", "scripted", code=0)
    chat(ann, "a", [f"/remember friend: {name}"], code=0)
    run(ann, "sessions", "share", "a", "--with", "bob", "--write", code=0)
    run(bob, "ask", "ann/a", f"鲍勃：{name} 明天来。", "--provider", "scripted", code=0)
    assert any(name in str(v) for (v,) in team.rows(
        "SELECT value FROM strategy_state WHERE strategy = 'tally/bob'"))
    run(ann, "facts", "forget", "a", "friend", "--purge", "--yes", code=0)
    assert not [v for (v,) in team.rows("SELECT value FROM strategy_state") if name in v]


def test_a_downgrade_to_read_drops_his_plugin_state(team: Team, tally: Path) -> None:
    ann, bob = shared_tally(team, tally)
    run(bob, "ask", "ann/a", "鲍勃：我住在巴黎。", "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "a", "--with", "bob", code=0)
    run(ann, "ask", "a", "安娜：我喜欢茶。", "--provider", "scripted", code=0)
    assert tally_state(bob, "ann/a") == tally_state(ann, "a")
    assert tally_state(bob, "ann/a")["read"] == 4
