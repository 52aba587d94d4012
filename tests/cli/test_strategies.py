"""`chatmem strategies`."""

from __future__ import annotations

import json

from cli_runner import invoke
from plugin_site import Install
from registered import STRATEGIES as REGISTRY


def test_strategies_json() -> None:
    result = invoke("strategies", "--json")
    assert result.exit_code == 0
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert set(rows) == set(REGISTRY)
    assert rows["buffer"]["parameters"] == {}
    assert rows["window"]["parameters"] == {"k": 5}
    assert rows["tokens"]["parameters"] == {"max_tokens": 2000}
    assert all(r["description"].strip() for r in rows.values())


def test_strategies_table() -> None:
    result = invoke("strategies")
    assert result.exit_code == 0
    assert "max_tokens=2000" in result.stdout and "Combine two with A+B" in result.stdout


def test_strategies_name_explains_every_parameter_with_default_and_range() -> None:
    for name, cls in REGISTRY.items():
        result = invoke("strategies", name, width=80)
        assert result.exit_code == 0, result.stderr
        assert all(len(line) <= 80 for line in result.stdout.splitlines())
        assert result.stdout.startswith(f"{name}  {cls.description[:20]}")
        shown = json.loads(invoke("strategies", name, "--json").stdout)
        assert [p["name"] for p in shown[0]["parameters"]] == [p.name for p in cls.PARAMS]
        for param in shown[0]["parameters"]:
            assert param["name"] in result.stdout and param["help"].strip()
    wide = invoke("strategies", "retrieval", width=200).stdout
    rows = {line.split()[0]: line for line in wide.splitlines()[3:]}
    assert "0.6" in rows["mmr"] and "a number from 0 to 1" in rows["mmr"]
    assert "one of hybrid, bm25, dense" in rows["mode"]
    assert "a whole number, 0 or more" in rows["top_k"] and "as many as fit" in rows["top_k"]


def test_strategies_name_of_a_combination_addresses_its_members_parameters() -> None:
    shown = json.loads(invoke("strategies", "window+entity", "--json").stdout)
    assert [[p["name"] for p in s["parameters"]] for s in shown] == [
        ["window.k"], ["entity.k", "entity.max_facts"]]
    assert shown[0]["parameters"][0] | {"help": ""} == {
        "name": "window.k", "default": 5, "takes": "a whole number, 0 or more", "help": "",
        "minimum": 0, "maximum": None, "choices": None}


def test_an_unknown_strategy_name_is_one_line_exit_2() -> None:
    result = invoke("strategies", "windw")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: unknown strategy 'windw' (valid: buffer, window")
    assert result.stderr.count("\n") == 1


def test_a_parameters_help_ends_as_its_own_language_ends_a_sentence() -> None:
    from chatmem.render.strategies import sentence

    assert sentence("how many turns to keep") == "How many turns to keep."
    assert sentence("保留最近几轮对话") == "保留最近几轮对话。"
    assert sentence("which mode?") == "Which mode?"
    assert sentence("最近のターン") == "最近のターン。"
    assert sentence("한국어 도움말") == "한국어 도움말."
    assert sentence("上下文的令牌上限（0 表示不限）") == "上下文的令牌上限（0 表示不限）。"
    assert sentence("风格「简洁」") == "风格「简洁」。"
    assert sentence("the cap (0: none)") == "The cap (0: none)."


def test_a_chinese_help_gets_no_ascii_period() -> None:
    """A plugin's Chinese help ending in its own punctuation got "." after it (`标记：.`), and
    one ending in a number or a Latin name got an English stop (`最多 10.`)."""
    from chatmem.render.strategies import sentence

    assert sentence("标记：") == "标记："
    assert sentence("可选，") == "可选，"
    assert sentence("记住…") == "记住…"
    assert sentence("默认 3 轮，最多 10") == "默认 3 轮，最多 10。"
    assert sentence("单位为 MB") == "单位为 MB。"
    assert sentence("the mark, 标记 in Chinese") == "The mark, 标记 in Chinese."
    assert sentence("max turns, e.g. 10") == "Max turns, e.g. 10."


CHINESE = '''
from dataclasses import dataclass

from chatmem.memory.buffer import BufferStrategy
from chatmem.memory.params import param


@dataclass(frozen=True)
class ZhParams:
    depth: int = param(3, "回溯的轮数，越大越慢，但记得越多；默认三轮，最多十轮，超过则截断，"
                          "截断时先丢掉最早的那一轮，然后依次往后")


class Zh(BufferStrategy):
    name = "zhong"
    description = ("每一轮都发送，并在上下文的开头附上一段固定的提醒文字，提醒模型注意用户之前"
                   "说过的重要事情，例如预算、日期、订单号，以及用户的偏好和约束条件。")
    OPTIONS = ZhParams


def register(plugins):
    plugins.add_strategy(Zh)
'''

CLOSING = tuple("，。、；：！？）」』")


def test_a_chinese_description_never_wraps_to_a_line_starting_with_closing_punctuation(
        installed: Install) -> None:
    """Rich folds Chinese cell by cell: at 100 columns `chatmem strategies` started a line of
    the plugin's description with "，" (and `strategies zhong` its help, at other widths)."""
    installed("chatmem-zhong", "chatmem_zhong", CHINESE)
    for width in range(60, 131, 2):
        listed = invoke("strategies", width=width)
        assert listed.exit_code == 0
        cells = [cell.strip() for line in listed.stdout.splitlines()
                 for cell in line.split("│")[1:-1]]
        described = "".join(line.split("│")[3].strip() for line in listed.stdout.splitlines()
                            if line.count("│") == 5)
        assert "每一轮都发送，并在上下文的开头" in described
        assert not [c for c in cells if c.startswith(CLOSING)], width
        shown = invoke("strategies", "zhong", width=width)
        assert shown.exit_code == 0
        assert not [line for line in shown.stdout.splitlines()
                    if line.strip().startswith(CLOSING)], width
