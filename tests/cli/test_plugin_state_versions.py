"""A plugin upgraded under a saved session whose new build fails on the state the old version
stored: the error says how that state is dropped, so the session chats again."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import invoke
from plugin_site import Install

from chatmem.errors import StrategyFailed
from chatmem.render.errors import Client, client_error_text, error_text

TALLY = '''
import os

from chatmem.memory.buffer import BufferStrategy


def turns_counted(state):
    if os.environ.get("TALLY_VERSION") == "2":
        return state["total"]["turns"] if state else 0  # version 2 forgot version 1's int
    return state.get("total", 0)


class Tally(BufferStrategy):
    name = "tally"
    description = "counts the turns; version 2 keeps them in a table"
    keeps_state = True

    def update(self, env):
        counted = turns_counted(env.state.get(self.name))
        total = env.history.turn_count()
        if counted < total:
            if os.environ.get("TALLY_VERSION") == "2":
                env.state.set(self.name, total={"turns": total})
            else:
                env.state.set(self.name, total=total)
        return []

    def build(self, request):
        if request.query == "boom":
            raise RuntimeError("boom")
        turns_counted(request.state.get(self.name))
        return super().build(request)


def register(plugins):
    plugins.add_strategy(Tally)
'''


def test_a_plugin_build_failing_on_its_stored_state_names_the_way_to_drop_it(
        installed: Install, tmp_path: Path) -> None:
    """Every turn of the session stopped on `strategy 'tally' failed: TypeError: ...`, with
    nothing saying that `sessions reset-state` drops what the old version stored."""
    installed("chatmem-tally", "chatmem_tally", TALLY, name="tally")
    db = str(tmp_path / "h.db")
    invoke("ask", "旅行", "第一句", "-s", "tally", "--save", "--provider", "scripted", "--db", db,
           code=0)
    new = {"TALLY_VERSION": "2"}
    failed = invoke("ask", "旅行", "第二句", "--provider", "scripted", "--db", db, env=new,
                    code=1)
    assert failed.stderr == (
        "error: strategy 'tally' failed in its build: TypeError: 'int' object is not"
        " subscriptable (plugin tally (chatmem-tally 0.1.0)); if it fails on the state an"
        " earlier version of it "
        "stored, `chatmem sessions reset-state 旅行 tally` drops that state (never the turns) "
        "and it is built again\n")
    invoke("sessions", "reset-state", "旅行", "tally", "--db", db, env=new, code=0)
    for text in ("第二句", "第三句"):
        invoke("ask", "旅行", text, "--provider", "scripted", "--db", db, env=new, code=0)
    # A session holding no state of it has nothing to drop: the line says only what failed.
    failed = invoke("ask", "新的", "boom", "-s", "tally", "--provider", "scripted", "--db", db,
                    code=1)
    assert failed.stderr == ("error: strategy 'tally' failed in its build: RuntimeError: boom"
                             " (plugin tally (chatmem-tally 0.1.0))\n")
    # A client of serve or MCP is not told of a command it cannot run.
    held = StrategyFailed("tally", RuntimeError("boom"))
    held.held_in = "旅行"
    assert "reset-state" in error_text(held)
    assert client_error_text(held, client=Client.MCP) == (
        "strategy 'tally' failed: RuntimeError: boom (plugin tally (chatmem-tally 0.1.0))")


def test_a_replay_failing_with_a_state_held_names_no_session_to_reset(
        installed: Install, tmp_path: Path) -> None:
    """A replay's history is its own scratch copy, not a session the user could reset."""
    installed("chatmem-tally", "chatmem_tally", TALLY, name="tally")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps({"role": role, "content": text}) for text in (
        "第一句", "boom") for role in ("user", "assistant")) + "\n", encoding="utf-8")
    failed = invoke("replay", str(transcript), "-s", "tally", "--provider", "scripted", code=1)
    assert failed.stderr.splitlines()[-1] == (
        "error: strategy 'tally' failed in its build: RuntimeError: boom (plugin tally"
        " (chatmem-tally 0.1.0))")


def test_a_plugin_update_failing_on_its_stored_state_names_the_way_to_drop_it(
        installed: Install, tmp_path: Path) -> None:
    """A build that reads no state chats on, but every turn's update failed on the old
    version's state (its memory never moving again), said as 'will retry next turn' alone."""
    lenient = TALLY.replace("        turns_counted(request.state.get(self.name))\n", "")
    installed("chatmem-tally", "chatmem_tally", lenient, name="tally")
    db = str(tmp_path / "h.db")
    invoke("ask", "旅行", "第一句", "-s", "tally", "--save", "--provider", "scripted", "--db", db,
           code=0)
    asked = invoke("ask", "旅行", "第二句", "--provider", "scripted", "--db", db,
                   env={"TALLY_VERSION": "2"}, code=0)
    failed = [line for line in asked.stderr.splitlines() if line.startswith("memory update")]
    assert failed and set(failed) == {
        "memory update failed, will retry next turn: strategy 'tally' could not update its "
        "memory: TypeError: 'int' object is not subscriptable (plugin tally (chatmem-tally "
        "0.1.0)); if it fails on the state an earlier version of it stored, `chatmem sessions "
        "reset-state 旅行 tally` drops that state (never the turns) and it is built again"}
    invoke("sessions", "reset-state", "旅行", "tally", "--db", db, code=0)
    asked = invoke("ask", "旅行", "第三句", "--provider", "scripted", "--db", db,
                   env={"TALLY_VERSION": "2"}, code=0)
    assert "memory update" not in asked.stderr


def test_inspect_next_failing_on_its_stored_state_names_the_way_to_drop_it(
        installed: Install, tmp_path: Path) -> None:
    """`inspect --next` (the README's way to see what the next turn sends) said only the
    TypeError, while `chat` and `ask` on the same session named `sessions reset-state`: its
    engine is opened with no settings, as a replay's over its scratch copy is."""
    installed("chatmem-tally", "chatmem_tally", TALLY, name="tally")
    db = str(tmp_path / "h.db")
    invoke("ask", "旅行", "第一句", "-s", "tally", "--save", "--provider", "scripted", "--db", db,
           code=0)
    failed = invoke("inspect", "旅行", "--next", "第二句", "--db", db,
                    env={"TALLY_VERSION": "2"}, code=1)
    assert failed.stderr.splitlines()[-1] == (
        "error: strategy 'tally' failed in its build: TypeError: 'int' object is not"
        " subscriptable (plugin tally (chatmem-tally 0.1.0)); if it fails on the state an"
        " earlier version of it "
        "stored, `chatmem sessions reset-state 旅行 tally` drops that state (never the turns) "
        "and it is built again")
