"""A plugin strategy slow to build is said once per chat, naming it and its plugin: a build
of 5 s made each turn wait 5 s, and the turn's line showed the reply's time alone (0.0 s)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import PONDERS, Install

import chatmem.engine.upkeep
from chatmem.engine import Engine


def test_a_slow_build_of_chatmem_s_own_member_is_no_plugin_s(
        installed: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole build was timed and the plugin members named: `ponders+summary`, whose
    summary member took the time (as a local embedder's first load does retrieval's), said
    'ponders' took it; a plugin's own time is what names it."""
    from chatmem.memory.summary import SummaryStrategy

    installed("chatmem-ponders", "chatmem_ponders", PONDERS)
    monkeypatch.setattr(chatmem.engine.upkeep, "SLOW_BUILD", 0.25)
    monkeypatch.setenv("PONDER", "0")
    own = SummaryStrategy.build

    def slow(self: SummaryStrategy, request: object) -> object:
        time.sleep(0.3)
        return own(self, request)  # type: ignore[arg-type]

    monkeypatch.setattr(SummaryStrategy, "build", slow)
    chatted = invoke("chat", "想", "-s", "ponders+summary", "--provider", "scripted",
                     "--db", str(tmp_path / "h.db"), input="一\ntwo\n", code=0)
    assert chatted.stdout.count("echo #") == 2
    assert "to build the context" not in chatted.stderr, chatted.stderr
    # Its own time still names it, in the same combination.
    monkeypatch.setenv("PONDER", "0.3")
    monkeypatch.setattr(SummaryStrategy, "build", own)
    chatted = invoke("chat", "想", "-s", "ponders+summary", "--provider", "scripted",
                     "--db", str(tmp_path / "h.db"), input="三\n", code=0)
    warned = [line for line in chatted.stderr.splitlines() if "to build the context" in line]
    assert len(warned) == 1 and "'ponders'" in warned[0], chatted.stderr


SLOW_UPDATE = '''
import os
import time

from chatmem.memory.window import WindowStrategy


class Mulls(WindowStrategy):
    name = "mulls"
    description = "mulls MULL seconds over each turn after it / 事后慢慢想"
    keeps_state = True

    def update(self, env):
        time.sleep(float(os.environ.get("MULL", "0")))
        env.state.set(self.name, turns=env.history.turn_count())
        return []


def register(plugins):
    plugins.add_strategy(Mulls)
'''


HOOKS = {
    # hook: (plugin, source, upkeep's threshold, environment variable, the line's words)
    "build": ("ponders", PONDERS, "SLOW_BUILD", "PONDER", "to build the context"),
    # After the reply, the prompt (or ask's end) waited for the update with nothing shown:
    # a plugin's update of 5 s looked like a chat that hung.
    "update": ("mulls", SLOW_UPDATE, "SLOW_UPDATE", "MULL", "to update its memory"),
}


@pytest.mark.parametrize("hook", list(HOOKS))
@pytest.mark.parametrize(("pause", "said"), [(0.3, 1), (0.0, 0)])
def test_a_plugin_strategy_slow_in_a_hook_is_said_once_naming_its_plugin(
        installed: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        hook: str, pause: float, said: int) -> None:
    name, source, threshold, variable, words = HOOKS[hook]
    installed(f"chatmem-{name}", f"chatmem_{name}", source)
    monkeypatch.setattr(chatmem.engine.upkeep, threshold, 0.25)
    monkeypatch.setenv(variable, str(pause))
    chatted = invoke("chat", "想", "-s", f"{name}+window", "--provider", "scripted",
                     "--db", str(tmp_path / "h.db"), input="一\ntwo\n三\n", code=0)
    assert chatted.stdout.count("echo #") == 3  # every turn answered and stored
    warned = [line for line in chatted.stderr.splitlines() if words in line]
    assert len(warned) == said, chatted.stderr
    if said:
        assert f"'{name}'" in warned[0] and f"chatmem-{name}" in warned[0]
        assert "'window'" not in warned[0]  # chatmem's own member is not the slow one


def test_a_slow_build_of_an_exchange_recorded_by_mcp_is_said_once(
        installed: Install, make_engine: Callable[..., Engine],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """MCP's record_turn builds the context its exchange is stored with: a plugin's slow build
    made each record wait and, unlike a chat's turn, said nothing (its slow update was said)."""
    from chatmem.session_notices import BuildSlow

    installed("chatmem-ponders", "chatmem_ponders", PONDERS)
    monkeypatch.setattr(chatmem.engine.upkeep, "SLOW_BUILD", 0.25)
    monkeypatch.setenv("PONDER", "0.3")
    engine = make_engine("ponders")
    said = [[n for n in engine.replay_turn(user, "好", kept=True).notices
             if isinstance(n, BuildSlow)] for user in ("一", "二")]
    assert [[n.strategy for n in s] for s in said] == [["ponders"], []]
    # A replay's turns (not kept: no one waits on them turn by turn) say nothing.
    replayed = make_engine("ponders").replay_turn("三", "好")
    assert not [n for n in replayed.notices if isinstance(n, BuildSlow)]


def test_a_what_if_and_the_next_context_shown_say_a_slow_plugin_build(
        installed: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`inspect --next` (the session's strategy, or another: a what-if) built with a plugin
    that took seconds and said nothing, where a chat's turn says it: each turn on that
    strategy would wait as long."""
    import chatmem.session_notices

    installed("chatmem-ponders", "chatmem_ponders", PONDERS)
    monkeypatch.setattr(chatmem.engine.upkeep, "SLOW_BUILD", 0.25)
    monkeypatch.setattr(chatmem.session_notices, "SLOW_BUILD", 0.25)
    db = str(tmp_path / "h.db")
    monkeypatch.setenv("PONDER", "0")
    invoke("chat", "想", "-s", "window", "--provider", "scripted", "--db", db,
           input="一\n", code=0)
    invoke("chat", "慢", "-s", "ponders", "--provider", "scripted", "--db", db,
           input="一\n", code=0)
    monkeypatch.setenv("PONDER", "0.3")
    for args in (["想", "--next", "二", "-s", "ponders"],  # a what-if
                 ["想", "--next", "二", "-s", "ponders+summary"],  # one that rebuilds
                 ["慢", "--next", "二"]):  # the session's own
        seen = invoke("inspect", *args, "--provider", "scripted", "--db", db, code=0)
        warned = [line for line in seen.stderr.splitlines() if "to build the context" in line]
        assert len(warned) == 1, (args, seen.stderr)
        assert "'ponders'" in warned[0] and "chatmem-ponders" in warned[0]
        assert "each turn on it waits as long" in warned[0]
    monkeypatch.setenv("PONDER", "0")
    seen = invoke("inspect", "想", "--next", "二", "-s", "ponders", "--provider", "scripted",
                  "--db", db, code=0)
    assert "to build the context" not in seen.stderr


PREPARES = '''
import os
import time

from chatmem.memory.window import WindowStrategy


class Readies(WindowStrategy):
    name = "readies"
    description = "reads READY seconds ahead before the first prompt / 先读一会儿"

    def prepare(self, opening):
        time.sleep(float(os.environ.get("READY", "0")))


def register(plugins):
    plugins.add_strategy(Readies)
'''


@pytest.mark.parametrize(("pause", "said"), [(0.3, 1), (0.0, 0)])
def test_a_plugin_strategy_slow_to_prepare_is_said_as_the_chat_opens(
        installed: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        pause: float, said: int) -> None:
    """A plugin's prepare() (read ahead before the first prompt) taking seconds delayed the
    chat's first prompt with nothing said, where a slow build or update is said."""
    installed("chatmem-readies", "chatmem_readies", PREPARES)
    monkeypatch.setattr(chatmem.engine.upkeep, "SLOW_BUILD", 0.25)
    monkeypatch.setenv("READY", str(pause))
    chatted = invoke("chat", "读", "-s", "readies+window", "--provider", "scripted",
                     "--db", str(tmp_path / "h.db"), input="一\ntwo\n", code=0)
    assert chatted.stdout.count("echo #") == 2
    warned = [line for line in chatted.stderr.splitlines() if "to prepare" in line]
    assert len(warned) == said, chatted.stderr
    if said:
        assert "'readies'" in warned[0] and "chatmem-readies" in warned[0]
        assert "first prompt waited" in warned[0] and "'window'" not in warned[0]
