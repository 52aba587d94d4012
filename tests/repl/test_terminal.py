"""The REPL in a real terminal (tmux), as a person uses it.

Each check waits for text on the screen with a timeout; nothing sleeps a fixed
time and then asserts. A private tmux server (its own socket) is used, so
nothing else running tmux on the machine is touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rich.cells import cell_len
from waiting import HANG

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.runs = 0

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, check=False)
        return done.stdout

    def start(self, env: dict[str, str], columns: int = 100) -> None:
        """A plain shell in a terminal `columns` wide and 30 lines high, with `env`."""
        exports = " ".join(f"{k}={v!s}" for k, v in env.items())
        self.tmux("new-session", "-d", "-x", str(columns), "-y", "30", "-s", "t",
                  f"env -i {exports} bash --norc --noprofile")

    def run(self, command: str) -> None:
        """Clear the screen, then run `command`: what shows after this is its own.

        The shell clears the screen some time after `clear` is typed; until then the last
        command's output is on it, and a wait for text it showed too (`last context`) would
        end at once. So this waits for a mark only a cleared screen can show: the shell
        prints it after clearing, a number it computes, new on each run (typed as a sum).
        """
        self.runs += 1
        self.keys(f"clear; echo cleared $((0 + {self.runs}))", "Enter")
        self.wait_for(f"cleared {self.runs}")
        self.keys(f"{command}; echo EXITED $?", "Enter")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-t", "t", "-p")

    def history(self) -> str:
        """Everything shown since the start, lines the terminal wrapped joined again."""
        return self.tmux("capture-pane", "-t", "t", "-p", "-J", "-S", "-")

    def wait_for(self, text: str, times: int = 1) -> str:
        """The screen once `text` shows on it (`times` times or more)."""
        return self.wait_until(lambda screen: screen.count(text) >= times, repr(text))

    def wait_until(self, shown: Callable[[str], bool], what: str) -> str:
        """The screen once `shown(screen)` holds."""
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline:
            screen = self.screen()
            if shown(screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{what} never showed; the screen:\n{self.screen()}")

    def resize(self, columns: int) -> None:
        self.tmux("resize-window", "-t", "t", "-x", str(columns))

    def stop(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal(f"chatmem-test-{os.getpid()}-{time.monotonic_ns()}")
    try:
        yield term
    finally:
        term.stop()


def test_a_person_chats_completes_and_recalls_with_stdout_redirected(
    terminal: Terminal, tmp_path: Path
) -> None:
    db, out = tmp_path / "t.db", tmp_path / "replies.txt"
    env = {"HOME": str(tmp_path), "TERM": "xterm", "CHATMEM_PROVIDER": "scripted",
           "PATH": os.environ["PATH"]}
    chat = f"{sys.executable} -m chatmem chat t --db {db}"
    terminal.start(env)
    terminal.run(f"{chat} > {out}")
    terminal.wait_for("t>")
    # The toolbar before any turn, at the bottom of the screen.
    assert terminal.wait_for("no turn yet").rstrip().splitlines()[-1].startswith(
        " session t · window · scripted:scripted")
    terminal.keys("hello there", "Enter")
    # stdout goes to the file, yet the reply shows on the terminal, and the toolbar counts.
    terminal.wait_for("last context 19 / 4,000 tokens")
    assert "echo #1: hello there" in terminal.screen()
    terminal.keys("/str")
    terminal.wait_for("show or switch the memory strategy")  # the menu, with its help
    terminal.keys("Tab")
    terminal.wait_for("t> /strategy")
    terminal.keys(" window k=2", "Enter")
    terminal.wait_for("strategy: window k=2")
    # Meta+Enter as one key: tmux writes "Escape" and "Enter" given apart as two writes,
    # and a loaded machine let the REPL read the Escape alone (a CI run sent two turns).
    terminal.keys("first line", "M-Enter", "second line", "Enter")
    terminal.wait_for("echo #2: first line")
    terminal.wait_for("tokens of 4,000", times=2)  # the turn is over: Ctrl-D would cancel it
    terminal.keys("C-d")
    terminal.wait_for("EXITED 0")
    assert out.read_text(encoding="utf-8") == (
        "echo #1: hello there\necho #2: first line\nsecond line\n")
    # A restart: Up brings back this session's last message, from the history file itself.
    terminal.run(chat)
    terminal.wait_for("last context")
    terminal.keys("Up")
    screen = terminal.wait_for("second line")
    assert "first line" in screen


def test_the_toolbar_and_the_token_line_fit_the_terminal_with_whole_fields(
    terminal: Terminal, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    # A price below a cent per turn: the cost has the most digits to lose at an edge.
    config.write_text('provider = "scripted"\n[prices.scripted]\ninput = 1.0\noutput = 2.0\n',
                      encoding="utf-8")
    env = {"HOME": str(tmp_path), "TERM": "xterm", "PATH": os.environ["PATH"]}
    terminal.start(env, columns=200)
    terminal.run(f"{sys.executable} -m chatmem chat planning-杭州-trip --config {config} "
                 f"--db {tmp_path / 't.db'}")
    terminal.wait_for("planning-杭州-trip>")
    terminal.keys("hello there", "Enter")
    terminal.wait_for("$0.0000")
    for turns, columns in enumerate((100, 80, 60, 40), start=2):
        # The whole toolbar, as 200 columns show it now.
        terminal.resize(200)
        # The toolbar, not the token line above it that a redraw may leave at the bottom for
        # a moment (it has dotted fields too).
        screen = terminal.wait_until(
            lambda screen: len(bottom_fields(screen)) == 6
            and bottom_fields(screen)[0].startswith("session "),
            "the whole toolbar at 200 columns")
        whole = bottom_fields(screen)
        assert whole[0] == "session planning-杭州-trip" and whole[-1].startswith("$0.000")
        terminal.resize(columns)

        def toolbar_fits(screen: str, columns: int = columns, whole: list[str] = whole) -> bool:
            bottom = screen.rstrip().splitlines()[-1]
            fields = bottom_fields(screen)
            return (bottom.startswith(" ") and cell_len(bottom) <= columns
                    and any(f.startswith("last context") for f in fields)
                    and all(f in whole for f in fields))

        # Redrawn at the new width with whole fields of the wide one: no `$0.000`.
        terminal.wait_until(toolbar_fits, f"a toolbar of whole fields at {columns} columns")
        # A new reply's token line is one line at this width, the prompt right under it.
        terminal.keys(f"at {columns} columns", "Enter")

        def shown_under(_: str, turns: int = turns) -> bool:
            return bool(under_token_line(terminal.history(), turns))

        terminal.wait_until(shown_under, f"a line under token line {turns}")
        history = terminal.history()
        assert under_token_line(history, turns).startswith("planning-杭州-trip>"), history
    terminal.keys("C-d")
    terminal.wait_for("EXITED 0")


def bottom_fields(screen: str) -> list[str]:
    """The toolbar's fields: the bottom line of the screen, split at its dots."""
    return screen.rstrip().splitlines()[-1].strip().split(" · ")


def under_token_line(history: str, turns: int) -> str:
    """The line under the token line of turn `turns` ("" until it shows)."""
    if history.count("tokens of 4,000") < turns:
        return ""
    lines = history.splitlines()
    last = max(i for i, line in enumerate(lines) if "tokens of 4,000" in line)
    return lines[last + 1] if last + 1 < len(lines) else ""


def test_a_history_deleted_under_the_chat_is_one_line_not_a_traceback(
    terminal: Terminal, tmp_path: Path
) -> None:
    """The prompt reads its Up history and its completions from the store: once the file
    was deleted (or a backup restored over it), prompt-toolkit printed the store's error as
    a traceback, and 'Press ENTER to continue...', at the next prompt and at Tab."""
    db = tmp_path / "历史 h.db"
    env = {"HOME": str(tmp_path), "TERM": "xterm", "CHATMEM_PROVIDER": "scripted",
           "PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    terminal.start(env)
    terminal.run(f"{sys.executable} -m chatmem chat t --db '{db}'")
    terminal.wait_for("no turn yet")
    terminal.keys("hello there", "Enter")
    terminal.wait_for("last context 19 / 4,000 tokens")
    for made in tmp_path.glob(f"{db.name}*"):
        made.unlink()
    terminal.keys("Up")  # the prompt already open reads the store for these keys
    terminal.keys("C-u", "still there?", "Enter")
    terminal.wait_for("nothing was sent:")  # its space may fall at the end of a line
    terminal.keys("Up")
    terminal.keys("C-u", "/switch ", "Tab")  # completion reads the store too
    terminal.keys("C-u", "C-d")
    terminal.wait_until(lambda s: "EXITED 2" in s or "Press ENTER" in s, "the chat's end")
    shown = terminal.history()
    assert "Traceback" not in shown and "Press ENTER" not in shown, shown
    said = " ".join(shown.split())  # the console wraps its lines between words
    gone = f"{db} was deleted or replaced while this command had it open; nothing was stored"
    assert said.count("error:") == 2, shown
    assert f"error: nothing was sent: {gone}" in said and f"error: {gone}" in said, shown
