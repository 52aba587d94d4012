"""A chatmem command run at a pseudo-terminal, for what it does only there (a question, a
key asked by getpass, a line drawn while it loads)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import subprocess
import sys
import termios
import time
from collections.abc import Sequence


def own_terminal() -> None:
    """The pseudo-terminal (stdin) as the child's controlling terminal: its /dev/tty, where
    getpass asks a key, as a shell's command has."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def at_a_terminal(argv: list[str], env: dict[str, str], *,
                  answers: Sequence[tuple[str, str]] = (), until: bytes | None = None,
                  seconds: float = 60, stdin: bool = True,
                  controlling: bool = False) -> tuple[str, int]:
    """Run `argv` with a pseudo-terminal as its stdout and stderr (and stdin, unless not
    `stdin`; its controlling terminal too with `controlling`), read all it writes, type each
    (question, typed) of `answers` once its question shows after the previous answer, and
    return what it wrote and its exit code. Once `until` shows, or after `seconds` (a
    failure, not a hang), it is killed and no more is read."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdin=follower if stdin else subprocess.DEVNULL,
                            stdout=follower, stderr=follower, env=env, close_fds=True,
                            preexec_fn=own_terminal if controlling else None)
    os.close(follower)
    seen, since, pending = b"", 0, list(answers)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and not (until is not None and until in seen):
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: the program and its children have closed it
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
            if pending and pending[0][0].encode() in seen[since:]:
                os.write(leader, pending.pop(0)[1].encode())
                since = len(seen)
        else:
            proc.kill()
        return seen.decode("utf-8", "replace"), proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)


def in_a_terminal(args: list[str], answer: str) -> str:
    """Run chatmem with a pseudo-terminal as stdin/stdout, answer its question, return all
    it printed."""
    env = {**os.environ, "COLUMNS": "200"}
    shown, _ = at_a_terminal([sys.executable, "-m", "chatmem", *args], env,
                             answers=[("[y/N]", answer + "\n")])
    return shown
