"""Run `chatmem` for the reliability tests, with a barrier and a kill switch.

Usage: python launch.py GATE_FILE|- chatmem-args...

- GATE_FILE: the heavy imports happen first; then every process waits for the
  file to appear, so several processes begin at the same instant ("-": no wait).
- CHATMEM_TEST_KILL_AT=N: the process kills itself (SIGKILL, as `kill -9`) just
  before its Nth SQL statement, so a test can stop it at any point of a turn,
  a commit, a migration, a purge or a delete.
- CHATMEM_TEST_KILL_AT_SQL=TEXT (with CHATMEM_TEST_KILL_AFTER=K, default 0): the same, just
  before the Kth statement after the first one starting with TEXT (0: that one), for a
  point a statement count cannot find (how many statements come first may vary).
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
kill_at_sql = os.environ.get("CHATMEM_TEST_KILL_AT_SQL", "")
kill_after = int(os.environ.get("CHATMEM_TEST_KILL_AFTER", "0"))
statements = 0
since_sql = -1  # statements since the first starting with kill_at_sql (-1: none yet)


def _trace(sql: str) -> None:
    global statements, since_sql
    statements += 1
    if since_sql < 0 and kill_at_sql and sql.startswith(kill_at_sql):
        since_sql = 0
    elif since_sql >= 0:
        since_sql += 1
    if statements == kill_at or since_sql == kill_after:
        os.kill(os.getpid(), signal.SIGKILL)


if kill_at or kill_at_sql:
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
