"""A plugin's provider that breaks its contract (README, Writing a plugin) in an easy way:
one line naming it and its plugin before or during a turn, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import Install

CARELESS = '''
import os
from chatmem.providers.scripted import ScriptedProvider

def create(settings):
    mistake = os.environ.get("MISTAKE")
    if mistake == "no-return":
        ScriptedProvider()  # the `return` forgotten
        return None
    return ScriptedProvider()

def register(plugins):
    plugins.add_provider("careless", create)
'''


@pytest.fixture
def careless(installed: Install) -> None:
    installed("chatmem-careless", "chatmem_careless", CARELESS, name="careless")


def ask(tmp_path: Path, mistake: str, code: int) -> list[str]:
    """`chatmem ask` with the careless provider making `mistake`: its stderr's lines."""
    asked = invoke("ask", "旅行", "你好 hi", "--provider", "careless",
                   "--db", str(tmp_path / "h.db"), env={"MISTAKE": mistake}, code=code)
    assert "Traceback" not in asked.output
    return asked.stderr.splitlines()


@pytest.mark.usefixtures("careless")
def test_a_create_that_returns_none_is_one_line_naming_the_plugin(tmp_path: Path) -> None:
    assert ask(tmp_path, "no-return", code=1) == [
        "error: provider 'careless' could not start: its create returned None, not a provider"
        " (plugin careless (chatmem-careless 0.1.0))"]
