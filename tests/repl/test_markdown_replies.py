"""Replies as Markdown in a real terminal (tmux), as sent in a pipe (issue 21).

The scripted model streams a reply with bold text, a list, a fenced code block
and an escape sequence that would retitle the window if obeyed.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_terminal import Terminal, terminal  # noqa: F401  (the fixture)
from waiting import wait_until

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

REPLY = ("Here is **bold** text.\n\n- first item\n- second item\n\n"
         "```python\ndef hello():\n    return 42\n```\n\n"
         "Done \x1b]2;PWNED\x07 中文也行。")


def scripted(tmp_path: Path) -> tuple[dict[str, str], Callable[[str], str]]:
    """The terminal's environment, and `chatmem COMMAND` on the scripted model."""
    script = tmp_path / "replies.jsonl"
    script.write_text(json.dumps({"reply": REPLY}) + "\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(f'provider = "scripted"\n[scripted]\nscript = "{script}"\n',
                      encoding="utf-8")
    env = {"HOME": str(tmp_path), "TERM": "xterm-256color", "PATH": os.environ["PATH"],
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    db = tmp_path / "t.db"
    return env, lambda command: f"{sys.executable} -m chatmem {command} --config {config} " \
                                f"--db {db}"


def assert_rendered(term: Terminal) -> None:
    screen = term.wait_for("中文也行。")
    assert "Here is bold text." in screen  # the asterisks are gone…
    assert "\x1b[1mbold" in term.tmux("capture-pane", "-t", "t", "-p", "-e")  # …bold
    assert " • first item" in screen and " • second item" in screen
    assert "def hello():" in screen and "```" not in screen
    # The escape is shown, not obeyed: the window keeps its title.
    assert "Done ␛]2;PWNED␇" in screen
    assert "PWNED" not in term.tmux("display-message", "-p", "-t", "t", "#{pane_title}")


def test_a_streamed_reply_renders_as_markdown_on_a_terminal_in_ask_and_chat(
    terminal: Terminal, tmp_path: Path  # noqa: F811
) -> None:
    env, chatmem = scripted(tmp_path)
    terminal.start(env)
    terminal.run(chatmem("ask hi"))
    assert_rendered(terminal)
    terminal.wait_for("EXITED 0")
    terminal.run(chatmem("chat t"))
    terminal.wait_for("t>")
    terminal.keys("hello", "Enter")
    assert_rendered(terminal)
    terminal.wait_for("tokens of 4,000")
    terminal.keys("C-d")
    terminal.wait_for("EXITED 0")


def test_a_reply_stays_plain_in_a_pipe_and_with_plain(
    terminal: Terminal, tmp_path: Path  # noqa: F811
) -> None:
    env, chatmem = scripted(tmp_path)
    terminal.start(env)
    # The pipe's reader writes to the terminal only once chatmem has exited: a `cat` that
    # wrote as it read raced chatmem's own stderr line (its token counts) to the screen,
    # and on a busy machine that line landed inside the reply.
    piped = tmp_path / "piped.txt"
    for command in (chatmem("ask hi") + f" | cat > {piped}; cat {piped}",
                    chatmem("ask hi --plain")):
        terminal.run(command)
        screen = terminal.wait_for("EXITED 0")
        assert "Here is **bold** text." in screen
        assert "- first item" in screen and "```python" in screen
        assert "Done ␛]2;PWNED␇ 中文也行。" in screen
        # The next command's screen must not be read from this one's.
        terminal.keys("clear", "Enter")
        wait_until(lambda: "EXITED 0" not in terminal.screen(), "the screen cleared")


def test_a_dumb_terminal_gets_the_reply_as_sent(
    terminal: Terminal, tmp_path: Path  # noqa: F811
) -> None:
    """TERM=dumb (Emacs's shell, an IDE's console): Rich's Markdown there lost the bold
    marks, the list's dashes and the code fence, with no style to show them by."""
    env, chatmem = scripted(tmp_path)
    terminal.start({**env, "TERM": "dumb"})
    terminal.run(chatmem("ask hi"))
    screen = terminal.wait_for("EXITED 0")
    assert "Here is **bold** text." in screen
    assert "- first item" in screen and "```python" in screen
    assert "Done ␛]2;PWNED␇ 中文也行。" in screen
