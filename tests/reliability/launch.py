"""Run `chatmem` for the reliability tests, with a barrier and a kill switch.

Usage: python launch.py GATE_FILE|- chatmem-args...

- GATE_FILE: the heavy imports happen first; then every process waits for the
  file to appear, so several processes begin at the same instant ("-": no wait).
- CHATMEM_TEST_KILL_AT=N: the process kills itself (SIGKILL, as `kill -9`) just
  before its Nth SQL statement, so a test can stop it at any point of a turn,
  a commit, a migration, a purge or a delete.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import time

import chatmem.cli
import chatmem.engine
import chatmem.repl

kill_at = int(os.environ.get("CHATMEM_TEST_KILL_AT", "0"))
statements = 0


def _trace(sql: str) -> None:
    global statements
    statements += 1
    if statements == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)


if kill_at:
    opened = sqlite3.connect

    def connect_traced(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = opened(*args, **kwargs)  # type: ignore[arg-type]
        conn.set_trace_callback(_trace)
        return conn

    sqlite3.connect = connect_traced  # type: ignore[assignment]

gate = sys.argv[1]
if gate != "-":
    deadline = time.monotonic() + 60
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.0005)
sys.argv = ["chatmem", *sys.argv[2:]]
chatmem.cli.main()
