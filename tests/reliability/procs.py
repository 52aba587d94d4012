"""Run chatmem processes for the reliability tests: barrier starts, kills, checks."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

LAUNCH = Path(__file__).with_name("launch.py")


def chatmem_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHATMEM_"))}
    return {**env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "NO_COLOR": "1", "COLUMNS": "200", **extra}


@dataclass
class Finished:
    args: Sequence[str]
    code: int
    stdout: str
    stderr: str


def start_together(commands: Sequence[Sequence[str]], inputs: Sequence[str], home: Path,
                   gate: Path, timeout: float = 300, **env: str) -> list[Finished]:
    """Start every command at once (behind a barrier file), feed its input, wait for all."""
    environment = chatmem_env(home, **env)
    procs = [
        subprocess.Popen([sys.executable, str(LAUNCH), str(gate), *command],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=environment)
        for command in commands
    ]
    # Input goes in first (the pipe buffers it); the barrier then releases all at once.
    for proc, text in zip(procs, inputs, strict=True):
        assert proc.stdin is not None
        proc.stdin.write(text.encode())
        proc.stdin.close()
        proc.stdin = None  # communicate() would flush the closed pipe
    gate.touch()
    done = []
    for proc, command in zip(procs, commands, strict=True):
        out, err = proc.communicate(timeout=timeout)
        done.append(Finished(command, proc.returncode, out.decode(errors="replace"),
                             err.decode(errors="replace")))
    return done


def integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def turn_rows(db: Path, session: str) -> list[tuple[int, int]]:
    """(turn number, history turn) of every ok turn of a session."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT t.number, t.history_turn FROM turns t JOIN sessions s ON s.id = t.session_id"
            " WHERE s.name = ? AND t.status = 'ok' ORDER BY t.number", [session]).fetchall()
    finally:
        conn.close()


def message_positions(db: Path, session: str) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT m.position, m.role, m.content FROM messages m"
            " JOIN sessions s ON s.id = m.session_id WHERE s.name = ? ORDER BY m.position",
            [session]).fetchall()
    finally:
        conn.close()


def run_chatmem(args: Sequence[str], home: Path, stdin: str = "", *, kill_at: int = 0,
                timeout: float = 120, **env: str) -> Finished:
    """One chatmem process; with kill_at it kills itself before that SQL statement."""
    extra = dict(env)
    if kill_at:
        extra["CHATMEM_TEST_KILL_AT"] = str(kill_at)
    done = subprocess.run([sys.executable, str(LAUNCH), "-", *args], input=stdin.encode(),
                          capture_output=True, env=chatmem_env(home, **extra), timeout=timeout)
    return Finished(args, done.returncode, done.stdout.decode(errors="replace"),
                    done.stderr.decode(errors="replace"))


def run_in_process(args: Sequence[str], home: Path, stdin: str = "") -> Finished:
    """The same command in this process (CliRunner): for a run that is not the one killed
    (building a starting file, the next command after a crash), without a process's
    start-up. Each invocation opens the file anew, as a next process would."""
    from cli_runner import RUNNER

    from chatmem.cli import app

    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "NO_COLOR": "1",
           "COLUMNS": "200"}
    done = RUNNER.invoke(app, list(args), input=stdin, env=env)
    return Finished(args, done.exit_code, done.stdout, done.stderr)


def statements_run(args: Sequence[str], home: Path, stdin: str = "") -> int:
    """How many SQL statements a full run of `args` executes (the range kill points fall in),
    counted in this process as launch.py counts a process's: the same count for every
    command test_crash kills, without a process's start-up."""
    statements = [0]
    opened = sqlite3.connect

    def count(sql: str) -> None:
        statements[0] += 1

    def connect_traced(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = opened(*args, **kwargs)  # type: ignore[arg-type]
        conn.set_trace_callback(count)
        return conn

    sqlite3.connect = connect_traced  # type: ignore[assignment]
    try:
        done = run_in_process(args, home, stdin)
    finally:
        sqlite3.connect = opened  # type: ignore[assignment]
    assert done.code == 0, done.stderr
    return statements[0]
