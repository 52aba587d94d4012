"""The config's [strategies.NAME] table in the commands that build a strategy the user names
without chatting with it (inspect's what-ifs, replay, eval): the same name builds the strategy
`chat -s NAME` builds, and a value given with -s or --param still wins."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_runner import invoke, output
from plugin_site import Install

TRAVEL = str(Path(__file__).resolve().parents[2] / "sessions" / "travel-zh.jsonl")


def configured(tmp_path: Path) -> tuple[str, ...]:
    config = tmp_path / "配置.toml"
    config.write_text('provider = "scripted"\n\n[strategies.window]\nk = 2\n', encoding="utf-8")
    return ("--config", str(config), "--db", str(tmp_path / "h.db"))


def strategy_of(*args: str) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(output(*args, "--json"))["strategy"]
    return seen


def test_inspect_what_ifs_take_the_configs_table_under_what_the_flags_give(
        tmp_path: Path) -> None:
    options = configured(tmp_path)
    for line in ("我们五月去杭州", "住在西湖边", "预算三千元", "妈妈想看龙井茶园"):
        invoke("ask", "--session", "旅行", "-s", "buffer", line, *options, code=0)

    at_a_turn = json.loads(output("inspect", "旅行", "3", "--strategy", "window", *options,
                                  "--json"))
    assert at_a_turn["strategy"]["params"] == {"k": 2}
    history = [p for p in at_a_turn["context"]["parts"] if p["kind"] == "history"]
    assert [m["content"] for m in history[0]["messages"] if m["role"] == "user"] == [
        "我们五月去杭州", "住在西湖边"]
    assert strategy_of("inspect", "旅行", "--next", "还有什么", "-s", "window",
                       *options)["params"] == {"k": 2}
    assert strategy_of("inspect", "旅行", "-s", "window:k=3", *options)["params"] == {"k": 3}
    assert strategy_of("inspect", "旅行", "-s", "window", "-p", "k=4",
                       *options)["params"] == {"k": 4}


def test_replay_and_eval_take_the_configs_table_under_what_the_flags_give(
        tmp_path: Path) -> None:
    options = configured(tmp_path)
    for command in ("replay", "eval"):
        data = json.loads(output(command, TRAVEL, "-s", "window", "-s", "window+entity",
                                 "-s", "window:k=3", *options, "--json"))
        assert [s["strategy"]["label"] for s in data["strategies"]] == [
            "window k=2", "window+entity window.k=2", "window k=3"], command


RENAMED = """
from dataclasses import dataclass

from chatmem.memory.params import param
from chatmem.memory.window import WindowStrategy


@dataclass(frozen=True)
class CihuiParams:
    recent: int = param(2, "最近几轮")


class Cihui(WindowStrategy):
    name = "cihui"
    description = "词汇: the recent turns"
    OPTIONS = CihuiParams


def register(plugins):
    plugins.add_strategy(Cihui)
"""
"""A plugin's new version, its parameter `k` renamed `recent`."""


def test_a_plugins_renamed_parameter_in_its_table_stops_only_what_uses_it(
        tmp_path: Path, installed: Install) -> None:
    installed("cihui-plugin", "cihui_plugin", RENAMED, version="0.2.0")
    config = tmp_path / "配置.toml"
    config.write_text('provider = "scripted"\n\n[strategies.cihui]\nk = 1\n',
                      encoding="utf-8")
    options = ("--config", str(config), "--db", str(tmp_path / "h.db"))
    invoke("ask", "--session", "旅行", "-s", "window", "我们五月去杭州", *options, code=0)
    assert "旅行" in output("sessions", "list", *options)
    invoke("config", "show", *options[:2], code=0)
    for strategy in ("cihui", "window+cihui"):
        refused = invoke("ask", "--session", "词汇", "-s", strategy, "你好", *options)
        assert refused.exit_code == 2, strategy
        assert refused.stderr.count("\n") == 1
        assert str(config) in refused.stderr and "'strategies.cihui'" in refused.stderr
        assert "'k'" in refused.stderr and "recent" in refused.stderr
    assert "词汇" not in output("sessions", "list", *options)
