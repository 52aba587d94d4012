"""A history file the user may not read or write: the error says which permission is missing
(issue 30, finding 7), run as a user the permissions apply to (root bypasses them)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem.store.permissions import missing_permission

NOBODY = 65534


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder another user can reach (pytest's tmp_path is private to its owner)."""
    with tempfile.TemporaryDirectory(prefix="chatmem-permissions-") as name:
        path = Path(name)
        path.chmod(0o777)
        yield path
        path.chmod(0o777)  # so that it can be removed


def as_another_user(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`chatmem ARGS` in a process bound by file permissions: as nobody when run as root."""
    command = [sys.executable, "-m", "chatmem", *args]
    if os.geteuid() == 0:
        # util-linux's setpriv, not Popen(user=...): the interpreter may live under /root,
        # and setpriv's exec reaches it where a Popen child that changed user first cannot.
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: no unprivileged user to test as")
        command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                   *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False,
                          cwd=home,
                          env={"PATH": os.environ["PATH"], "HOME": str(home), "COLUMNS": "200"})


def history(folder: Path) -> Path:
    db = folder / "h.db"
    assert invoke("ask", "s", "hello", "--provider", "scripted", "--db", str(db)).exit_code == 0
    for beside in folder.glob("h.db-*"):
        beside.unlink()  # the file alone, as after a clean close
    return db


def test_an_unreadable_file_says_read_permission_is_missing(folder: Path) -> None:
    db = history(folder)
    db.chmod(0o222)
    done = as_another_user("logs", "--db", str(db), home=folder)
    assert done.returncode != 0
    assert done.stderr == (f"error: {db}: cannot open database: you lack read permission on the "
                           f"file (mode --w--w--w-, owner uid {db.stat().st_uid})\n")


def test_a_read_only_file_says_write_permission_is_missing_and_stays_as_it_was(
        folder: Path) -> None:
    db = history(folder)
    db.chmod(0o444)
    before = db.read_bytes()
    done = as_another_user("ask", "s", "again", "--provider", "scripted", "--db", str(db),
                           home=folder)
    assert done.returncode != 0
    assert done.stderr.strip().endswith(
        f"{db} is read-only: nothing can be stored; you lack write permission on the file "
        f"(mode -r--r--r--, owner uid {db.stat().st_uid})"), done.stderr
    assert db.read_bytes() == before


def test_a_folder_sqlite_cannot_write_beside_the_file_in_is_named(folder: Path) -> None:
    db = history(folder)
    db.chmod(0o666)  # the file itself is open to anyone: only the folder is closed
    folder.chmod(0o555)
    done = as_another_user("logs", "--db", str(db), home=folder)
    assert done.returncode != 0
    assert f"you lack write permission on its folder {folder} (mode dr-xr-xr-x" in done.stderr
    assert "h.db-wal and h.db-shm" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_nothing_is_missing_for_a_file_the_user_may_use(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    db.write_bytes(b"")
    assert missing_permission(db, write=True) is None
    assert missing_permission(tmp_path / "new.db", write=True) is None
    assert stat.S_IMODE(tmp_path.stat().st_mode) & 0o700 == 0o700


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs of the test's own, which the test can make read-only (needs root)."""
    where = tmp_path / "介质"
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)],
            capture_output=True, check=False).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root and mount)")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], capture_output=True, check=False)


def test_a_history_on_a_read_only_file_system_says_so(mounted: Path) -> None:
    """It said 'you lack write permission on its folder (mode drwxrwxrwt)', a mode that
    grants write to everyone, as root: the mount was read-only."""
    db = history(mounted)
    before = db.read_bytes()
    subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
    for args in (("sessions", "list"), ("ask", "s", "再问一次", "--provider", "scripted")):
        done = invoke(*args, "--db", str(db))
        assert done.exit_code != 0
        assert done.stderr == (f"error: {db}: cannot open it: its folder {mounted} is on a file"
                               " system mounted read-only, where SQLite must keep h.db-wal and"
                               " h.db-shm\n")
    assert db.read_bytes() == before


def test_an_immutable_history_says_so_and_stays_as_it_was(tmp_path: Path) -> None:
    """It said "you lack write permission on the file (mode -rw-------)", a mode that grants
    it, as root: the file was marked immutable."""
    db = history(tmp_path)
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(db)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not available here (needs root and a file system with it)")
    try:
        before = db.read_bytes()
        done = invoke("ask", "s", "再问一次", "--provider", "scripted", "--db", str(db))
        assert done.exit_code != 0
        assert done.stderr.endswith(
            "the file is immutable (chattr +i): nobody, its owner and root included, may "
            f"write it; `chattr -i {db}` lifts that\n")
        assert done.stderr.count("\n") == 1
        assert db.read_bytes() == before
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=False)
