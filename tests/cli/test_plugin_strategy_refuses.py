"""A plugin's strategy whose __init__ raises on the user's parameters (its own check, a bug):
one line naming it, its parameters and its plugin wherever it is built, never a traceback;
a session saved with such parameters is still listed and still opens."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke
from plugin_site import Install

PICKY = '''
import os
from dataclasses import dataclass
from chatmem.memory.params import param
from chatmem.memory.buffer import BufferStrategy

@dataclass(frozen=True)
class PickyParams:
    n: int = param(2, "how many turns 轮数", minimum=0)

class Picky(BufferStrategy):
    name = "picky"
    description = "refuses more turns than PICKY_MAX in its __init__"
    OPTIONS = PickyParams

    def __init__(self, **params):
        if int(params.get("n", 2)) > int(os.environ.get("PICKY_MAX", "5")):
            raise ValueError(f"n 太大: {params['n']}")
        super().__init__(**params)

def register(plugins):
    plugins.add_strategy(Picky)
'''

REFUSED = ("strategy 'picky' could not start with n=9: ValueError: n 太大: 9 "
           "(plugin picky (chatmem-picky 0.1.0))")


@pytest.fixture
def picky(installed: Install) -> None:
    installed("chatmem-picky", "chatmem_picky", PICKY, name="picky")


@pytest.mark.usefixtures("picky")
def test_parameters_the_plugin_refuses_are_one_line_from_ask_inspect_and_eval(
        tmp_path: Path) -> None:
    db = str(tmp_path / "h.db")
    invoke("ask", "p", "你好", "--provider", "scripted", "--db", db, code=0)
    transcript = tmp_path / "会话.jsonl"
    transcript.write_text('{"role": "user", "content": "你好"}\n'
                          '{"role": "assistant", "content": "好"}\n'
                          '{"probe": "你好?", "expect_text": ["你好"]}\n', encoding="utf-8")
    for args in (["ask", "你好", "-s", "picky:n=9"],
                 ["ask", "你好", "-s", "picky", "--param", "n=9"],
                 ["inspect", "p", "--strategy", "picky:n=9"],
                 ["eval", str(transcript), "-s", "picky:n=9"]):
        result = invoke(*args, "--provider", "scripted", "--db", db, code=1)
        assert "Traceback" not in result.output
        assert result.stderr.splitlines() == [f"error: {REFUSED}"], args


@pytest.mark.usefixtures("picky")
def test_a_config_table_the_plugin_refuses_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "配置.toml"
    config.write_text("[strategies.picky]\nn = 9\n", encoding="utf-8")
    result = invoke("ask", "你好", "-s", "picky", "--provider", "scripted", "--config",
                    str(config), code=1)
    assert result.stderr.splitlines() == [f"error: {config}: key 'strategies.picky': {REFUSED}"]


@pytest.mark.usefixtures("picky")
def test_a_refused_strategy_switch_in_the_repl_is_one_line_and_the_chat_goes_on(
        tmp_path: Path) -> None:
    chatted = invoke("chat", "c", "--provider", "scripted", "--db", str(tmp_path / "h.db"),
                     input="/strategy picky n=9\n你好\n")
    assert "Traceback" not in chatted.output
    assert [line for line in chatted.stderr.splitlines() if line.startswith("error:")] == [
        f"error: {REFUSED}"]
    assert chatted.stdout.splitlines()[-1] == "echo #1: 你好"


@pytest.mark.usefixtures("picky")
def test_a_session_saved_with_parameters_the_plugin_now_refuses_is_listed_and_opens(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "h.db")
    invoke("ask", "旅行", "第一句", "-s", "picky:n=4", "--provider", "scripted", "--db", db,
           code=0)
    monkeypatch.setenv("PICKY_MAX", "3")  # a plugin upgrade that narrows what it takes
    listed = invoke("sessions", "list", "--db", db, code=0)
    assert "旅行" in listed.stdout and "n=4" in listed.stdout
    asked = invoke("ask", "旅行", "第二句", "--provider", "scripted", "--db", db, code=0)
    assert "Traceback" not in asked.output
    assert asked.stdout == "echo #1: 第二句\n"
    assert ("session 旅行 was saved by another version of strategy picky; left out n=4 "
            "(refused now: the default is used)") in asked.stderr
