"""key_command runs in a process group of its own: a timeout kills what it started too.

A key_command that started a program and hung (a password manager waiting on a locked
vault) was killed after key_command_timeout, but only the shell: the program it started
lived on, holding the terminal. At a terminal the group is put in front while it runs, so
a password manager may still ask for a passphrase there.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chatmem.config.keys import run_key_command
from chatmem.errors import KeyUnavailable


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # killed, not yet reaped by whoever adopted it


@pytest.mark.parametrize("started", ["sleep 60 & echo $! > {pids}; wait",
                                     "(sleep 60; echo 钥匙) & echo $! > {pids}; wait"],
                         ids=["program", "subshell"])
def test_what_a_timed_out_key_command_started_is_killed_with_it(
        tmp_path: Path, started: str) -> None:
    pids = tmp_path / "pids"
    with pytest.raises(KeyUnavailable, match=r"gave no key within 0\.5 s"):
        run_key_command(started.format(pids=pids), 0.5)
    pid = int(pids.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


_AT_A_TERMINAL = """
import os, sys
os.close(os.open(os.ttyname(0), os.O_RDWR))  # the session's controlling terminal
from chatmem.config.keys import run_key_command
key = run_key_command('printf "passphrase: " > /dev/tty; read -r k < /dev/tty; printf %s "$k"', 20)
print("KEY=" + key, "FRONT=" + str(os.tcgetpgrp(0) == os.getpgrp()), flush=True)
"""


def test_at_a_terminal_it_may_still_read_a_passphrase_there(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", _AT_A_TERMINAL], stdin=follower,
                            stdout=follower, stderr=follower, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    os.close(follower)
    seen, answered = b"", False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and b"FRONT=" not in seen:
        if select.select([leader], [], [], 0.2)[0]:
            try:
                seen += os.read(leader, 4096)
            except OSError:
                break
        if not answered and b"passphrase: " in seen:
            os.write(leader, "密码 s3cret\n".encode())
            answered = True
    proc.wait(timeout=30)
    os.close(leader)
    assert "KEY=密码 s3cret FRONT=True" in seen.decode(errors="replace"), seen
