"""A killed encrypt, decrypt or rekey leaves no copy of the history behind for long.

Issue 19, finding 6: kill -9 during `chatmem encrypt` or `rekey` could leave
`.NAME.db.converting-PID`, the whole history readable with the old key, and
nothing ever removed it. Now the next command that opens the history removes
a conversion copy whose process is gone.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_runner import invoke
from conftest import needs_sqlcipher

from chatmem.errors import HistoryLocked
from chatmem.store import Store, cipher

pytestmark = needs_sqlcipher
KEY = "old key 旧钥匙 5521"
NEW_KEY = "new key 新钥匙 7713"
SEED = int(os.environ.get("CHATMEM_CRASH_SEED", "19"))


def leftovers(db: Path) -> list[Path]:
    return sorted(db.parent.glob(f".{db.name}.converting-*"))


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A plain and an encrypted history large enough that converting takes a while."""
    folder = tmp_path_factory.mktemp("bases")
    plain = folder / "plain.db"
    with Store(plain) as store:
        sid = store.sessions.create_session("big", "buffer").id
        line = "The courier Tobiasz Wrenfield brings the velvet armchair. 我们住在西湖边。 "
        store.history.import_messages(sid, [{"role": "user" if i % 2 == 0 else "assistant",
                                             "content": f"{i} {line * 4}"} for i in range(4000)])
    encrypted = folder / "encrypted.db"
    shutil.copy(plain, encrypted)
    cipher.convert(encrypted, None, KEY)
    return {"plain": plain, "encrypted": encrypted}


CONVERSIONS = [("encrypt", "plain", {"CHATMEM_KEY": KEY}),
               ("decrypt", "encrypted", {"CHATMEM_KEY": KEY}),
               ("rekey", "encrypted", {"CHATMEM_KEY": KEY, "CHATMEM_NEW_KEY": NEW_KEY})]


def kill_during(command: str, db: Path, env: dict[str, str], delay: float) -> bool:
    """Start `chatmem COMMAND`, SIGKILL it `delay` s after its copy appears; True when the
    copy was still there after the kill."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **env}
    proc = subprocess.Popen([sys.executable, "-m", "chatmem", command, "--db", str(db)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=environment)
    deadline = time.monotonic() + 60
    while not leftovers(db) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    return bool(leftovers(db))


def key_now(db: Path, old: str) -> str | None:
    """The key the file is under after the kill: the conversion happened or it did not."""
    if cipher.file_kind(db) != "encrypted":
        return None
    for key in (old, NEW_KEY):
        try:
            Store(db, key=key).close()
            return key
        except HistoryLocked:  # the wrong key of the two
            continue
    raise AssertionError("the file opens with neither key")


@pytest.mark.parametrize("runs", [3, pytest.param(15, marks=pytest.mark.slow)],
                         ids=["3-kills", "15-kills"])
@pytest.mark.parametrize(("command", "base", "env"), CONVERSIONS,
                         ids=[c[0] for c in CONVERSIONS])
def test_kill_9_during_a_conversion_then_one_command_leaves_no_copy(
        histories: dict[str, Path], tmp_path: Path, command: str, base: str,
        env: dict[str, str], runs: int) -> None:
    kill_runs(histories[base], tmp_path, command, env, runs)


def kill_runs(base: Path, tmp_path: Path, command: str, env: dict[str, str], runs: int) -> None:
    """`runs` times: a fresh copy of `base`, the conversion killed at a random moment after
    its copy appears, then `sessions list`; no copy may be left."""
    rng = random.Random(f"{SEED}-{command}")
    left = 0
    for n in range(runs):
        folder = tmp_path / f"run{n}"
        folder.mkdir()
        db = folder / "h.db"
        shutil.copy(base, db)
        left += kill_during(command, db, env, rng.uniform(0, 0.25))
        key = key_now(db, KEY)
        result = invoke("sessions", "list", "--db", str(db),
                        env={"CHATMEM_KEY": key})
        assert result.exit_code == 0, result.stderr
        assert leftovers(db) == [], f"run {n}"
    print(f"{command}: {runs} kills, {left} left a copy before the next command")
    assert left > 0, "no kill hit the conversion: the test proved nothing"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("command", [["sessions", "prune", "--older-than", "30d"],
                                     ["forget-me", "--yes", "--user", "nobody"]],
                         ids=["prune", "forget-me"])
def test_prune_and_forget_me_remove_a_dead_conversions_copy_and_keep_a_live_one(
        histories: dict[str, Path], tmp_path: Path, command: list[str]) -> None:
    db = tmp_path / "h.db"
    shutil.copy(histories["plain"], db)
    dead = cipher.conversion_file(db, _dead_pid())
    shutil.copy(histories["plain"], dead)
    dead.with_name(dead.name + "-journal").write_bytes(b"x")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = cipher.conversion_file(db, sleeper.pid)
        live.write_bytes(b"in progress")
        result = invoke(*command, "--db", str(db))
        assert result.exit_code == 0, result.stderr
        assert leftovers(db) == [live]
    finally:
        sleeper.kill()
        sleeper.wait()
