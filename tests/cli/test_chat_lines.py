"""What chat and ask say on stderr around their turns (cli/chat_lines.py), at a terminal."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from cli_runner import invoke
from in_a_terminal import at_a_terminal
from rich.cells import cell_len

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_what_opening_a_session_says_wraps_between_words_on_a_screen(tmp_path: Path) -> None:
    """Printed as one line whatever the width, the terminal folded it at its edge mid-word
    (`…its next turns run on scri` / `pted:scripted`), where the chat's own lines wrap
    between words; a pipe still gets it on one line."""
    db = tmp_path / "h.db"
    first = invoke("ask", "甲", "hi", "--provider", "scripted", "--db", str(db))
    assert first.exit_code == 0, first.stderr
    args = ["ask", "甲", "hello", "--provider", "scripted", "--model", "some-other-model-name",
            "--db", str(db)]
    env = {**os.environ, "COLUMNS": "50", "LINES": "30", "TERM": "xterm-256color"}
    shown, code = at_a_terminal([sys.executable, "-m", "chatmem", *args], env, seconds=90)
    assert code == 0, shown
    lines = [ANSI.sub("", line).rstrip() for line in shown.replace("\r", "").split("\n")]
    start = next(i for i, line in enumerate(lines) if line.startswith("session 甲 ran on"))
    said = []
    for line in lines[start:]:
        said.append(line)
        if "(--model)" in line:
            break
    assert all(cell_len(line) <= 50 for line in said), said
    assert " ".join(said) == ("session 甲 ran on scripted:scripted; its next turns run on"
                              " scripted:some-other-model-name (--model)")
    piped = invoke(*args[:-3], "a-third-model-name", "--db", str(db))
    assert piped.exit_code == 0, piped.stderr
    assert ("session 甲 ran on scripted:some-other-model-name; its next turns run on"
            " scripted:a-third-model-name (--model)\n") in piped.stderr
