"""Lines chatmem writes to stderr (errors, notices, warnings), at a narrow terminal."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from cli_runner import invoke
from in_a_terminal import at_a_terminal
from rich.cells import cell_len

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_an_error_line_wraps_between_words_on_a_screen_and_stays_one_line_in_a_pipe(
    tmp_path: Path,
) -> None:
    """Printed with soft_wrap (one line, for scripts) on a 40-column terminal, the terminal
    folded it at its edge mid-word (`…in /tmp/…/h.d` / `b`), as ~98 such lines did."""
    db = tmp_path / "h.db"
    assert invoke("ask", "s", "hi", "--provider", "scripted", "--db", str(db)).exit_code == 0
    args = ["sessions", "show", "a-session-nobody-made", "--db", str(db)]
    env = {**os.environ, "COLUMNS": "40", "LINES": "30", "TERM": "xterm-256color"}
    shown, code = at_a_terminal([sys.executable, "-m", "chatmem", *args], env, seconds=90)
    assert code == 1, shown
    # What stays on the screen: a line's text after its last carriage return (a "loading…"
    # line is drawn, then erased, before the error).
    lines = [ANSI.sub("", line.rstrip("\r").split("\r")[-1]).rstrip()
             for line in shown.split("\n")]
    said = lines[next(i for i, line in enumerate(lines) if line.startswith("error:")):]
    said = [line for line in said if line]
    assert said[0].startswith("error: no session named")
    assert all(cell_len(line) <= 40 for line in said), said
    piped = invoke(*args)
    assert piped.exit_code == 1
    [error] = piped.stderr.splitlines()  # a pipe still gets one line
    # Every word whole on one screen line: broken only where a space was (or inside a word
    # longer than the width, the database's path here).
    words = [w for w in error.split() if cell_len(w) < 40]
    shown_words = " ".join(said).split()
    assert all(w in shown_words for w in words), (words, said)
