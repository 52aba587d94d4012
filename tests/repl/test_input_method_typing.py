"""What a Chinese input method types for a slash command's spaces and quotes.

In Chinese input mode the space bar types U+3000 (the ideographic space) and `"` types
“ or ＂: a command typed so means what the ASCII one means, as ／ already does.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import invoke, repl
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.render import make_console
from chatmem.repl.completion import SlashCompleter
from chatmem.repl.loop import Repl
from chatmem.store import Store

SPACE = "\u3000"


def errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error")]


def test_an_ideographic_space_parts_a_command_and_its_arguments(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    notes = tmp_path / f"会议{SPACE}纪要.md"
    notes.write_text("周五开会。\n", encoding="utf-8")
    _, err = repl(db, "会话", [
        f"/remember{SPACE}爱好：游泳",
        f"/remember{SPACE}--user{SPACE}城市：杭州",
        f"/facts{SPACE}--all-history",
        # Inside quotes the space is part of the name, as an ASCII one is.
        f'/file{SPACE}"{notes}"',
        "你好",
        f"/inspect{SPACE}1",
        f"／tokens{SPACE}{SPACE}你好",
    ])
    assert errors(err) == []
    assert f"attached {notes}" in err
    result = invoke("facts", "list", "--db", str(db), "--json", code=0)
    assert [(f["key"], f["value"], f["scope"]) for f in json.loads(result.stdout)] == [
        ("爱好", "游泳", "session"), ("城市", "杭州", "user")]


def test_an_ideographic_space_counts_as_an_argument_too_many(tmp_path: Path) -> None:
    _, err = repl(tmp_path / "x.db", "会话", [f"/inspect{SPACE}1{SPACE}2"])
    assert len(errors(err)) == 1
    assert "unexpected argument '2'" in errors(err)[0]


def test_input_method_quotes_clear_the_system_prompt(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    _, err = repl(db, "会话", ["/system “”", "/system"])
    assert errors(err) == []
    assert "system prompt cleared" in err
    assert "(none)" in err
    _, err = repl(db, "会话", ["/system 简短回答。", "/system ＂＂", "/system"])
    assert err.count("system prompt cleared") == 1
    assert "(none)" in err
    # A wholly quoted prompt loses its quotes, as `/system "..."` does; quotes inside stay.
    _, err = repl(db, "会话", ["/system “只用中文回答。”", "/system"])
    assert "只用中文回答。" in err and "“" not in err
    _, err = repl(db, "会话", ["/system “甲” 和 “乙”", "/system"])
    assert "“甲” 和 “乙”" in err


def test_completion_reads_an_ideographic_space_as_a_space(tmp_path: Path) -> None:
    with Store(tmp_path / "c.db") as store:
        engine = open_session(store, Settings(system="Be brief."), ScriptedProvider(), "t",
                              strategy="window")
        chat = Repl(engine, make_console(), make_console(stderr=True))
        offered = [c.text for c in SlashCompleter(chat).get_completions(
            Document(f"/strategy{SPACE}summary-b"), CompleteEvent())]
        assert offered == ["summary-buffer"]
        offered = [c.text for c in SlashCompleter(chat).get_completions(
            Document(f"/strategy{SPACE}window{SPACE}"), CompleteEvent())]
        assert "k=" in offered
