"""kill -9 at seeded random points: nothing half-done survives, the next process goes on.

Each run kills a chatmem process just before one of its SQL statements (chosen
by a seeded random generator over every statement the same command runs), so
the kill lands before the request, between the statements of a commit, inside
a summary or fact update, a migration, a purge or a delete. Afterwards the
file must pass integrity_check, every turn must be complete or absent, derived
state must point at stored messages, and a new process must continue the
session. `-m slow` makes 60 runs; the default run makes 8. The killed command is
always a process of its own; the files it starts from and the command after it run
in this process (each opens the file anew), which saves a process start-up each.
"""

from __future__ import annotations

import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from checks import assert_file_consistent, rows
from procs import run_chatmem, run_in_process, statements_run

STRATEGIES = ["buffer", "window:k=2", "summary", "summary-buffer:max_tokens=300", "entity",
              "retrieval"]
QUICK_RUNS = 8
SLOW_RUNS = 60


def lines(tag: str, count: int) -> str:
    return "".join(f"{tag} {i}: my order ORD-{7000 + i} ships on 2026-05-{i % 27 + 1:02d},"
                   f" 我住在杭州第{i}号\n" for i in range(count))


@dataclass
class Scenario:
    name: str
    args: list[str]
    stdin: str
    existing: bool
    """Whether the run starts from a file that already holds the session."""


def scenario(rng: random.Random, db: Path) -> Scenario:
    strategy = rng.choice(STRATEGIES)
    chat = ["chat", "s", "--db", str(db), "--provider", "scripted", "-s", strategy]
    kind = rng.choice(["new-file", "turns", "turns", "turns", "purge", "delete"])
    if kind == "new-file":
        return Scenario(f"create+chat {strategy}", chat, lines("new", 2), existing=False)
    if kind == "turns":
        return Scenario(f"chat {strategy}", chat, lines("more", 3), existing=True)
    if kind == "purge":
        return Scenario("facts forget --purge", ["facts", "forget", "name", "--purge",
                        "--db", str(db)], "", existing=True)
    return Scenario("sessions delete", ["sessions", "delete", "s", "--yes", "--db", str(db)],
                    "", existing=True)


def prepared(db: Path, home: Path, strategy_args: list[str]) -> None:
    """A file holding session s with a few turns, facts and summaries."""
    done = run_in_process(["chat", "s", "--db", str(db), "--provider", "scripted", "-s",
                           "entity"], home, lines("old", 3) + "my name is Alice Zhang\n")
    assert done.code == 0, done.stderr
    done = run_in_process(["chat", "s", "--db", str(db), "--provider", "scripted",
                           *strategy_args], home, lines("older", 2))
    assert done.code == 0, done.stderr


def crash_once(seed: int, tmp_path: Path, base: dict[str, Path]) -> str:
    rng = random.Random(seed)
    home = tmp_path / f"run{seed}"
    home.mkdir()
    db = home / "history.db"
    plan = scenario(rng, db)
    args = plan.args
    if plan.existing:
        strategy_args = args[args.index("-s"):args.index("-s") + 2] if "-s" in args else []
        key = " ".join(strategy_args)
        if key not in base:
            # Build each starting file once and copy it: the runs differ in the kill only.
            base_home = tmp_path / f"base{len(base)}"
            base_home.mkdir()
            prepared(base_home / "history.db", base_home, strategy_args)
            base[key] = base_home / "history.db"
        shutil.copy(base[key], db)
    count_key = f"count {plan.name}"
    if count_key not in base:
        probe = home / "probe"
        probe.mkdir()
        if plan.existing:
            shutil.copy(db, probe / "history.db")
        probe_args = [a.replace(str(db), str(probe / "history.db")) for a in args]
        base[count_key] = Path(str(statements_run(probe_args, probe, plan.stdin)))
    total = int(str(base[count_key]))
    kill_at = rng.randint(1, total)
    done = run_chatmem(args, home, plan.stdin, kill_at=kill_at)
    assert done.code in (-9, 0), done.stderr  # killed, or finished before the kill point
    if db.exists():
        assert_file_consistent(db)
    # The next command continues (or starts) the session.
    has_schema = db.exists() and rows(db, "SELECT 1 FROM sqlite_master WHERE name = 'messages'")
    before = rows(db, "SELECT count(*) FROM messages")[0][0] if has_schema else 0
    after_run = run_in_process(["chat", "s", "--db", str(db), "--provider", "scripted"], home,
                               "and one more turn\n")
    assert after_run.code == 0, (plan.name, kill_at, after_run.stderr)
    assert "error" not in after_run.stderr, after_run.stderr
    assert_file_consistent(db)
    assert rows(db, "SELECT count(*) FROM messages")[0][0] == before + 2
    return f"{plan.name} killed at statement {kill_at}/{total}"


def run_crashes(runs: int, tmp_path: Path) -> None:
    seed0 = int(os.environ.get("CHATMEM_CRASH_SEED", "1300"))
    base: dict[str, Path] = {}
    outcomes = [crash_once(seed0 + i, tmp_path, base) for i in range(runs)]
    print(f"\ncrash test: {len(outcomes)} kill -9 runs (seeds {seed0}–{seed0 + runs - 1})")
    for outcome in outcomes:
        print("  " + outcome)


def test_kill_9_at_random_points_leaves_a_usable_file(tmp_path: Path) -> None:
    run_crashes(QUICK_RUNS, tmp_path)


@pytest.mark.slow
def test_kill_9_at_random_points_many_runs(tmp_path: Path) -> None:
    run_crashes(SLOW_RUNS, tmp_path)


@pytest.mark.parametrize("step", range(2, 80, 10))
def test_kill_9_while_creating_a_new_file_leaves_it_usable(tmp_path: Path, step: int) -> None:
    db = tmp_path / "new.db"
    args = ["chat", "s", "--db", str(db), "--provider", "scripted"]
    done = run_chatmem(args, tmp_path, "hello\n", kill_at=step)
    assert done.code in (-9, 0)
    again = run_in_process(args, tmp_path, "hello again\n")
    assert again.code == 0, again.stderr
    assert_file_consistent(db)


def test_a_file_left_with_only_the_migrations_table_by_an_older_crash_is_recovered(
    tmp_path: Path,
) -> None:
    """chatmem 0.1 created _sqlite_migrations outside the transaction; a kill left only it."""
    import sqlite3

    from chatmem.store import Store

    db = tmp_path / "half.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE _sqlite_migrations (id INTEGER PRIMARY KEY, migration_set TEXT,"
                 " name TEXT, applied_at TEXT)")
    conn.commit()
    conn.close()
    with Store(db) as store:
        store.sessions.create_session("s", "buffer")
    assert_file_consistent(db)


@pytest.mark.parametrize("strategy", ["window", "summary"])
def test_kill_9_mid_stream_leaves_no_trace_of_the_turn(tmp_path: Path, chat_server,
                                                       strategy: str) -> None:
    """A real process streaming from a real server, killed between two deltas."""
    import signal
    import subprocess
    import sys

    from procs import LAUNCH, chatmem_env
    from waiting import HANG, Watched

    db = tmp_path / "h.db"
    # Turn 1 (and its summary), then a reply the server holds open.
    chat_server.plan = ["ok", "slow"] if strategy == "window" else ["ok", "ok", "slow"]
    env = chatmem_env(tmp_path, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=chat_server.base_url)
    args = [sys.executable, str(LAUNCH), "-", "chat", "s", "--db", str(db), "--model", "m",
            "-s", strategy]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    out = Watched(proc.stdout)
    proc.stdin.write(b"my order is ORD-1\nnow tell me a long story\n")
    proc.stdin.close()
    # Turn 1's reply, then the first delta of turn 2's: the rest of it is held.
    out.wait_for(lambda text: text == "Hello from the test server.\nHello",
                 "the first delta of the held reply")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=HANG)
    chat_server.release.set()
    assert_file_consistent(db)
    assert [c for (c,) in rows(db, "SELECT content FROM messages WHERE role = 'user'")] == [
        "my order is ORD-1"]  # the killed turn left nothing
    after = run_in_process(["chat", "s", "--db", str(db), "--provider", "scripted"], tmp_path,
                           "and now?\n")
    assert after.code == 0, after.stderr
    assert_file_consistent(db)
