"""A block pasted while `chatmem chat` opens waits at the first prompt as one message.

Opening takes seconds (ten with the embedded model on a busy machine). The terminal was
still the shell's meanwhile, so it sent a paste unmarked, and once the prompt read it
each line's newline sent that line as a turn of its own: 40 pasted lines were 40 turns,
40 model calls, stored for good. Run at a pseudo-terminal that behaves as a terminal
does: it marks a paste (bracketed paste) only when the program has asked it to."""

from __future__ import annotations

import os
import pty
import select
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

MARK_ON = b"\x1b[?2004h"
LINES = ["第一行：我们五月去杭州", "第二行：预算五千欧元", "third line: hotel by the lake"]


class Terminal:
    """chatmem at a pseudo-terminal, read as it draws."""

    def __init__(self, args: list[str]) -> None:
        leader, follower = pty.openpty()
        env = {**os.environ, "COLUMNS": "100", "LINES": "30", "TERM": "xterm-256color"}
        self.proc = subprocess.Popen([sys.executable, "-m", "chatmem", *args], stdin=follower,
                                     stdout=follower, stderr=follower, env=env,
                                     close_fds=True)
        os.close(follower)
        self.leader = leader
        self.seen = b""

    def read_until(self, *wanted: bytes, seconds: float = 60) -> bytes:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = [w for w in wanted if w in self.seen]
            if found:
                return min(found, key=self.seen.index)
            ready, _, _ = select.select([self.leader], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self.leader, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                self.seen += chunk
        raise AssertionError(f"none of {wanted} in {self.seen.decode('utf-8', 'replace')}")

    def paste(self, text: str) -> None:
        """As a terminal pastes: marked when the program asked for marks, else as typed."""
        block = text.replace("\n", "\r").encode()
        marked = self.seen.rfind(MARK_ON) > self.seen.rfind(b"\x1b[?2004l")
        os.write(self.leader, b"\x1b[200~" + block + b"\x1b[201~" if marked else block)

    def close(self) -> None:
        try:
            self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.leader)


def user_messages(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute(
            "SELECT content FROM messages WHERE role = 'user' ORDER BY id")]


def test_a_block_pasted_while_the_chat_opens_is_one_message(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    terminal = Terminal(["chat", "粘贴", "--provider", "scripted", "--db", str(db)])
    try:
        # Pasted as soon as the chat asks for marks, or else when it shows its first line.
        terminal.read_until(MARK_ON, "session 粘贴 ·".encode())
        terminal.paste("\n".join(LINES))
        terminal.read_until("粘贴>".encode())
        os.write(terminal.leader, b"\r")
        terminal.read_until(b"echo #")
        terminal.read_until(b"provider reported")
        time.sleep(1)  # any turn more the lines would have made
        os.write(terminal.leader, b"\x04")
    finally:
        terminal.close()
    assert terminal.proc.returncode == 0
    assert user_messages(db) == ["\n".join(LINES)]


def test_keys_typed_while_the_model_loads_never_reach_the_shell_after_ctrl_c(
        tmp_path: Path) -> None:
    """`echo hi` and Enter typed while the embedded model loaded, then Ctrl-C: chatmem ended
    and the shell ran `echo hi` (the quiet terminal keeps keys across a Ctrl-C)."""
    import signal
    import termios

    import pytest
    from local_model import local_model_missing

    if (missing := local_model_missing()) is not None:
        pytest.skip(missing)
    from waiting import HANG

    late: list[str] = []
    while True:
        leader, follower = pty.openpty()
        env = {**os.environ, "COLUMNS": "100", "LINES": "30", "TERM": "xterm-256color"}
        proc = subprocess.Popen([sys.executable, "-m", "chatmem", "chat", "载入", "--provider",
                                 "local", "--db", str(tmp_path / f"h{len(late)}.db")],
                                stdin=follower, stdout=follower, stderr=follower, env=env,
                                close_fds=True)
        terminal = Terminal.__new__(Terminal)
        terminal.proc, terminal.leader, terminal.seen = proc, leader, b""
        try:
            terminal.read_until(MARK_ON)  # quiet, the model loading
            os.write(leader, "echo 你好\r".encode())
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            # It leaves, or (the Ctrl-C sent once the model had loaded: this process woken
            # late from its sleep on a busy machine, CI) shows its prompt and stays: that
            # is not the case under test, and is tried again, twice at most. Waited for,
            # either, not for a time: a chat at its prompt was waited for 120 s before.
            deadline = time.monotonic() + HANG
            while (proc.poll() is None and "载入>".encode() not in terminal.seen
                   and time.monotonic() < deadline):
                if select.select([leader], [], [], 0.1)[0]:
                    terminal.seen += os.read(leader, 4096)
            if proc.poll() is None and "载入>".encode() in terminal.seen and len(late) < 2:
                late.append(terminal.seen.decode("utf-8", "replace"))
                proc.kill()
                continue
            assert proc.poll() == 130, (proc.poll(), late, terminal.seen)
            # What the shell would read next, once chatmem has left.
            quiet = termios.tcgetattr(follower)
            quiet[3] &= ~termios.ICANON
            quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 0, 0
            termios.tcsetattr(follower, termios.TCSANOW, quiet)
            assert os.read(follower, 1024) == b""
            return
        finally:
            os.close(follower)
            terminal.close()
