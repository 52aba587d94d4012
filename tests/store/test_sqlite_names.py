"""A history path SQLite would read as a URI (`file:NAME`) is the file opened: the one
chatmem creates private, checks the key of, encrypts and copies."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cli_runner import invoke
from conftest import needs_sqlcipher

from chatmem.store.sqlite_names import sqlite_name

KEY = "k0123456789abcdef 钥匙"
PHRASE = "我的订单号是 QX-48213"


def test_a_relative_path_is_led_by_the_current_folder_and_the_rest_kept() -> None:
    assert sqlite_name("file:z.db") == "./file:z.db"
    assert sqlite_name(Path("FILE:z.db?mode=ro")) == "./FILE:z.db?mode=ro"
    assert sqlite_name("历史/h.db") == "./历史/h.db"
    assert sqlite_name("/tmp/file:z.db") == "/tmp/file:z.db"
    assert sqlite_name(":memory:") == ":memory:"


def _listing(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_a_file_uri_looking_path_holds_the_history_it_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = invoke("ask", "--db", "file:z.db", "--provider", "scripted", "--session", "s", PHRASE)
    assert done.exit_code == 0, done.stderr
    history = tmp_path / "file:z.db"
    assert _listing(tmp_path) <= {"file:z.db", "file:z.db-wal", "file:z.db-shm"}
    assert PHRASE.encode() in history.read_bytes()
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    shown = invoke("sessions", "show", "s", "--db", "file:z.db", "--json")
    assert PHRASE in shown.stdout

    copied = invoke("sessions", "copy", "s", "--from", "file:z.db", "--to", "file:c.db")
    assert copied.exit_code == 0, copied.stderr
    assert "file:c.db" in _listing(tmp_path) and "c.db" not in _listing(tmp_path)
    assert PHRASE in invoke("sessions", "show", "s", "--db", "file:c.db", "--json").stdout


@needs_sqlcipher
def test_encrypting_a_file_uri_looking_path_encrypts_that_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert invoke("ask", "--db", "file:z.db", "--provider", "scripted", "--session",
                  "s", PHRASE).exit_code == 0
    done = invoke("encrypt", "--db", "file:z.db", env={"CHATMEM_KEY": KEY})
    assert done.exit_code == 0, done.stderr
    history = tmp_path / "file:z.db"
    assert not history.read_bytes().startswith(b"SQLite format 3")
    assert _listing(tmp_path) == {"file:z.db"}
    shown = invoke("sessions", "show", "s", "--db", "file:z.db", "--json",
                   env={"CHATMEM_KEY": KEY})
    assert PHRASE in shown.stdout

    rekeyed = invoke("rekey", "--db", "file:z.db",
                     env={"CHATMEM_KEY": KEY, "CHATMEM_NEW_KEY": KEY + " 2"})
    assert rekeyed.exit_code == 0, rekeyed.stderr
    assert _listing(tmp_path) == {"file:z.db"}
    assert PHRASE in invoke("sessions", "show", "s", "--db", "file:z.db", "--json",
                            env={"CHATMEM_KEY": KEY + " 2"}).stdout
