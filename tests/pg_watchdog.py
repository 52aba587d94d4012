"""Stops a test run's PostgreSQL server once the run has ended, however it ended.

Usage: python pg_watchdog.py FOLDER, with stdin a pipe the test process holds open
(tests/pg.py). End-of-file on stdin means that process is gone: if the server in
FOLDER/data still runs (the run was killed before its teardown), it is stopped with a
fast shutdown (SIGINT: sessions are ended, nothing waits for the dead clients), killed
if it ignores that, and FOLDER is removed.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

GRACE = 30.0
"""Seconds a fast shutdown may take before the server is killed outright."""


def postmaster(folder: Path) -> int | None:
    """The server's process id, from its pid file; None when no server runs there."""
    try:
        return int((folder / "data" / "postmaster.pid").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop(pid: int) -> None:
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + GRACE
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


def main() -> None:
    folder = Path(sys.argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the run
    sys.stdin.buffer.read()  # returns only at end-of-file: the test process has ended
    pid = postmaster(folder)
    if pid is not None and alive(pid):
        stop(pid)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
