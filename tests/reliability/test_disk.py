"""A read-only file and a full disk: one clear line, never a partial turn.

Read-only is what SQLite reports for a file it cannot write (root ignores
permission bits, so the test opens the file read-only the way SQLite would).
A full disk is a file at its page limit (PRAGMA max_page_count), and a real
1 MB tmpfs where the machine lets the test mount one.
"""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from checks import assert_file_consistent
from cli_runner import chat, invoke

import chatmem.store.sqlite_opening as connection


def test_a_read_only_file_fails_before_the_model_is_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "h.db"
    assert chat(db, "s", "first turn\n", "-s", "summary").exit_code == 0
    before = db.read_bytes()
    log = tmp_path / "requests.jsonl"
    monkeypatch.setattr(connection, "connect",
                        lambda path, key=None, **_: sqlite3.connect(f"file:{path}?mode=ro",
                                                                  uri=True, timeout=5))
    monkeypatch.setenv("CHATMEM_SCRIPTED_LOG", str(log))
    result = chat(db, "s", "second turn\n", "-s", "summary")
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].endswith(
        f"{db} is read-only: nothing can be stored (check the file's and its folder's"
        " permissions)"), result.stderr
    assert not log.exists() or "second turn" not in log.read_text()  # no model call
    monkeypatch.undo()
    assert db.read_bytes() == before
    assert_file_consistent(db)


def test_an_older_read_only_file_says_it_must_be_upgraded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sessions list` only reads, yet said "read-only: nothing can be stored" of a file
    needing an upgrade first."""
    import sqlite_utils
    from sqlite_utils.migrations import Migrations

    from chatmem.store.schema import MIGRATIONS

    db = tmp_path / "旧.db"
    old = Migrations("chatmem")
    for fn in MIGRATIONS[:-1]:
        old(name=fn.__name__)(fn)
    made = sqlite_utils.Database(db)
    made.conn.execute("PRAGMA journal_mode = WAL")  # as chatmem left it
    old.apply(made)
    made.close()
    before = db.read_bytes()
    monkeypatch.setattr(connection, "connect",
                        lambda path, key=None, **_: sqlite3.connect(f"file:{path}?mode=ro",
                                                                  uri=True, timeout=5))
    listed = invoke("sessions", "list", "--db", str(db))
    assert (listed.exit_code, listed.stderr) == (
        2, f"error: {db} was written by an older chatmem and must be upgraded before use,"
           " which needs write access: check the file's and its folder's permissions\n")
    monkeypatch.undo()
    assert db.read_bytes() == before


def fill_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The history file may grow no more: each connection is held to the pages it has, as
    a full disk holds it (until monkeypatch.undo)."""
    opened = connection.connect

    def at_its_limit(path: str | Path, key: str | None = None, **how: Any) -> sqlite3.Connection:
        conn = opened(path, key, **how)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")  # not one page more
        return conn

    monkeypatch.setattr(connection, "connect", at_its_limit)


def test_a_full_disk_stores_no_partial_turn_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "h.db"
    assert chat(db, "s", "first turn\n", "-s", "summary").exit_code == 0
    fill_the_disk(monkeypatch)
    big = "a long line that needs new pages " * 400
    result = chat(db, "s", big + "\n", "-s", "summary")
    assert result.exit_code != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "the disk is full or failing; nothing was changed" in errors[0]
    monkeypatch.undo()
    assert_file_consistent(db)  # turn 1 whole, nothing of the failed turn
    assert chat(db, "s", "after the disk was freed\n", "-s", "summary").exit_code == 0
    assert_file_consistent(db)


def test_after_a_full_disk_later_turns_are_not_sent_until_there_is_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each turn of a chat piped on a full disk paid for a model call, then was not stored:
    once a write found the disk full, the next is checked for room before it is sent."""
    db = tmp_path / "h.db"
    assert chat(db, "s", "first turn\n", "-s", "summary").exit_code == 0
    fill_the_disk(monkeypatch)
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("CHATMEM_SCRIPTED_LOG", str(log))
    big = "a long line that needs new pages " * 400
    result = chat(db, "s", f"{big}\n第二个问题\n第三个问题\n", "-s", "summary")
    assert result.exit_code != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 3, result.stderr
    assert "the disk is full or failing; nothing was changed" in errors[0]
    assert errors[1:] == [f"error: nothing was sent: {db}: the disk is still full (free some"
                          " space and try again)"] * 2
    assert "第二个问题" not in log.read_text(encoding="utf-8")  # no model call
    monkeypatch.undo()
    assert_file_consistent(db)
    assert chat(db, "s", "after the disk was freed\n", "-s", "summary").exit_code == 0


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (the max_page_count test covers a full disk)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_real_full_filesystem_is_one_line_and_the_file_stays_usable(tiny_tmpfs: Path) -> None:
    db = tiny_tmpfs / "h.db"
    line = "夏天我们去杭州 and we keep talking about it at length " * 30
    codes = [chat(db, "s", line + "\n", "-s", "summary").exit_code for _ in range(60)]
    assert codes[0] == 0 and codes[-1] != 0, codes  # it worked, then the disk filled up
    result = chat(db, "s", line + "\n", "-s", "summary")
    errors = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert_file_consistent(db)
