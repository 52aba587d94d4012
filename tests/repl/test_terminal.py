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
from waiting import HANG

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, check=False)
        return done.stdout

    def start(self, env: dict[str, str]) -> None:
        """A plain shell in a 100×30 terminal, with `env`."""
        exports = " ".join(f"{k}={v!s}" for k, v in env.items())
        self.tmux("new-session", "-d", "-x", "100", "-y", "30", "-s", "t",
                  f"env -i {exports} bash --norc --noprofile")

    def run(self, command: str) -> None:
        self.keys("clear", "Enter")
        self.keys(f"{command}; echo EXITED $?", "Enter")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-t", "t", "-p")

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
    terminal.keys("first line", "Escape", "Enter", "second line", "Enter")
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
