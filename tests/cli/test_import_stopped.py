"""`chatmem sessions import` of a large transcript stopped by a real signal after its first
batch committed (chatmem.store.unfinished): SIGTERM deletes what it wrote; after kill -9
what it wrote is hidden, and the next import removes it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_runner import invoke
from waiting import HANG, Watched, ctrl_c_reaches_it, wait_until

from chatmem.app.session_files import IMPORT_BATCH

MESSAGES = 15 * IMPORT_BATCH  # seconds of batches still to write when the first is seen


def _transcript(path: Path) -> Path:
    path.write_text("".join(
        json.dumps({"role": "user" if i % 2 else "assistant",
                    "content": f"第{i}句 about Porto 波尔图"}, ensure_ascii=False) + "\n"
        for i in range(1, MESSAGES + 1)), encoding="utf-8")
    return path


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as con:
        return con.execute(sql).fetchall()


def _stopped_after_a_batch(tmp_path: Path, how: signal.Signals) -> int:
    return _stopped_saying(tmp_path, how)[0]


def _stopped_saying(tmp_path: Path, how: signal.Signals) -> tuple[int, Watched]:
    """The import's exit code and its stderr."""
    db = tmp_path / "x.db"
    process = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "sessions", "import",
         str(_transcript(tmp_path / "big.jsonl")), "大", "--no-index", "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=ctrl_c_reaches_it,
        env={**os.environ, "HOME": str(tmp_path), "NO_COLOR": "1"})
    assert process.stdout is not None and process.stderr is not None
    err = Watched(process.stderr)
    Watched(process.stdout)
    written = ("SELECT count(*) FROM messages JOIN sessions ON sessions.id = session_id"
               " WHERE sessions.name LIKE 'unfinished-import.%'")

    def a_batch_is_in() -> bool:
        if process.poll() is not None:
            return True
        try:
            return db.exists() and int(str(_rows(db, written)[0][0])) > 0
        except sqlite3.OperationalError:  # the file being made, its tables not yet there
            return False

    wait_until(a_batch_is_in, "the import's first batch committed")
    assert process.poll() is None, err.rest()
    process.send_signal(how)
    return process.wait(timeout=HANG), err


def test_sigterm_deletes_what_the_import_wrote(tmp_path: Path) -> None:
    assert _stopped_after_a_batch(tmp_path, signal.SIGTERM) == 128 + signal.SIGTERM
    assert _rows(tmp_path / "x.db", "SELECT name FROM sessions") == []
    assert _rows(tmp_path / "x.db", "SELECT count(*) FROM messages") == [(0,)]


def test_ctrl_c_says_nothing_was_imported(tmp_path: Path) -> None:
    """Ctrl-C said only "interrupted": whether half a session was left was not said."""
    code, err = _stopped_saying(tmp_path, signal.SIGINT)
    assert code == 130
    said = err.wait_for(lambda text: "interrupted" in text, "its last line")
    assert "nothing was imported" in said and "session 大" in said
    assert _rows(tmp_path / "x.db", "SELECT name FROM sessions") == []
    assert _rows(tmp_path / "x.db", "SELECT count(*) FROM messages") == [(0,)]


def test_after_kill_9_it_is_hidden_and_the_next_import_removes_it(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    assert _stopped_after_a_batch(tmp_path, signal.SIGKILL) == -signal.SIGKILL
    left, = _rows(db, "SELECT name FROM sessions")
    assert str(left[0]).startswith("unfinished-import.")
    listed = invoke("sessions", "list", "--json", "--db", str(db), code=0)
    assert json.loads(listed.stdout) == []
    small = tmp_path / "small.jsonl"
    small.write_text('{"role": "user", "content": "又是我"}\n', encoding="utf-8")
    invoke("sessions", "import", str(small), "大", "--no-index", "--db", str(db), code=0)
    assert _rows(db, "SELECT name FROM sessions") == [("大",)]
    assert _rows(db, "SELECT count(*) FROM messages") == [(1,)]


def test_ctrl_c_as_the_session_is_named_says_it_was_created(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real SIGINT the moment the import's last transaction named the session: it said
    "nothing was imported: session 大 was not created" beside the session, whole."""
    from chatmem.store import unfinished

    publish = unfinished.publish

    def then_ctrl_c(*args: Any, **kwargs: Any) -> None:
        publish(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(unfinished, "publish", then_ctrl_c)
    # As a terminal's Ctrl-C acts, whatever pytest started with (SIGINT ignored in a
    # background job): put back as found at the end.
    found = signal.signal(signal.SIGINT, signal.default_int_handler)
    db = tmp_path / "x.db"
    small = tmp_path / "small.jsonl"
    small.write_text('{"role": "user", "content": "我们去波尔图"}\n', encoding="utf-8")
    try:
        result = invoke("sessions", "import", str(small), "大", "--no-index", "--db", str(db))
    finally:
        signal.signal(signal.SIGINT, found)
    assert result.exit_code == 130
    assert "nothing was imported" not in result.stderr
    assert "session 大 was created" in result.stderr
    assert _rows(db, "SELECT name FROM sessions") == [("大",)]
    assert _rows(db, "SELECT count(*) FROM messages") == [(1,)]
