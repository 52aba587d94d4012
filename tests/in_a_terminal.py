"""A chatmem command run at a pseudo-terminal, for what it does only there (a question)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time


def in_a_terminal(args: list[str], answer: str) -> str:
    """Run chatmem with a pseudo-terminal as stdin/stdout, answer its question, return all
    it printed."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "chatmem", *args], stdin=follower,
                            stdout=follower, stderr=follower, env=env, close_fds=True)
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 60
    answered = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        if not answered and b"[y/N]" in seen:
            os.write(leader, answer.encode() + b"\n")
            answered = True
        if proc.poll() is not None and not ready:
            break
    proc.wait(timeout=30)
    os.close(leader)
    return seen.decode("utf-8", "replace")
