"""A plugin strategy keeping a large state is said once per chat, naming it and its plugin:
each turn reads that state whole (60 MB made each turn take 10-15 s, and nothing said why)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import Install

from chatmem.session_notices import LARGE_STATE

HOARDS = '''
import os

from chatmem.memory.buffer import BufferStrategy


class Hoards(BufferStrategy):
    name = "hoards"
    description = "keeps HOARD characters of padding in its state / 囤积"
    keeps_state = True

    def update(self, env):
        size = int(os.environ.get("HOARD", "0"))
        env.state.set(self.name, turns=env.history.turn_count(), pad="记" * size)
        return []


def register(plugins):
    plugins.add_strategy(Hoards)
'''


# 记 is three bytes: the state's size is what is stored, not its count of characters.
@pytest.mark.parametrize(("size", "said"), [(LARGE_STATE // 3 + 1, 1), (LARGE_STATE // 6, 0)])
def test_a_plugin_strategy_s_large_state_is_said_once_naming_its_plugin(
        installed: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        size: int, said: int) -> None:
    installed("chatmem-hoards", "chatmem_hoards", HOARDS)
    monkeypatch.setenv("HOARD", str(size))
    chatted = invoke("chat", "囤", "-s", "hoards", "--provider", "scripted",
                     "--db", str(tmp_path / "h.db"), input="一\ntwo\n三\n", code=0)
    assert chatted.stdout.count("echo #") == 3  # every turn answered and stored
    warned = [line for line in chatted.stderr.splitlines() if "MB of state" in line]
    assert len(warned) == said, chatted.stderr
    if said:
        assert "'hoards'" in warned[0] and "chatmem-hoards" in warned[0]
        assert f"about {LARGE_STATE / 1e6:.0f} MB of state" in warned[0]
