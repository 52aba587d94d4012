"""Where chatmem keeps its files: the platform's data and config directories.

A fresh HOME reads as an empty history; an old history file in the config
directory moves to the data directory once.
"""

from __future__ import annotations

import json
import sqlite3
from functools import partial
from pathlib import Path

import pytest
from cli_runner import invoke

from chatmem.store import Store

run = partial(invoke, width=80)


def test_the_history_file_lives_in_the_data_directory(isolated_home: Path) -> None:
    assert run("ask", "trip", "hello", "--provider", "scripted").exit_code == 0
    assert (isolated_home / ".local" / "share" / "chatmem" / "chatmem.db").is_file()
    assert not (isolated_home / ".config" / "chatmem" / "chatmem.db").exists()


def test_xdg_data_home_is_honoured(isolated_home: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert run("ask", "trip", "hello", "--provider", "scripted").exit_code == 0
    assert (tmp_path / "data" / "chatmem" / "chatmem.db").is_file()


@pytest.mark.parametrize("variable", ["XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"])
def test_a_relative_xdg_home_is_ignored_as_the_spec_says(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """Read as given, a relative one would make each working folder a history (or config) of its
    own; platformdirs (pinned) ignores it, and this keeps it so."""
    work = tmp_path / "工作"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv(variable, "relative")
    assert run("ask", "trip", "hello", "--provider", "scripted").exit_code == 0
    assert run("config", "init").exit_code == 0
    assert (isolated_home / ".local" / "share" / "chatmem" / "chatmem.db").is_file()
    assert (isolated_home / ".config" / "chatmem" / "config.toml").is_file()
    assert not (work / "relative").exists()


@pytest.mark.parametrize(("command", "stdout", "stderr"), [
    (["sessions", "list"], "", "no sessions yet (chatmem chat NAME starts one)\n"),
    (["sessions", "list", "--json"], "[]\n", ""),
    (["facts", "list", "--json"], "[]\n", ""),
    (["facts", "list"], "", "no facts yet: state them in the chat, or /remember KEY: VALUE\n"),
])
def test_read_only_commands_on_a_fresh_home_show_an_empty_history(
    isolated_home: Path, command: list[str], stdout: str, stderr: str
) -> None:
    """An empty list is said on stderr, stdout left empty, as `logs` does (docs/json.md):
    `sessions list | wc -l` counted the sentence as a session."""
    result = run(*command)
    assert (result.exit_code, result.stdout, result.stderr) == (0, stdout, stderr)
    assert [p for p in isolated_home.rglob("*") if p.is_file()] == []  # nothing created


def test_a_missing_session_on_a_fresh_home_is_not_found(isolated_home: Path) -> None:
    result = run("sessions", "show", "trip")
    assert result.exit_code == 1
    db = isolated_home / ".local" / "share" / "chatmem" / "chatmem.db"
    assert result.stderr == (f"error: no session named 'trip' in {db}"
        " (`chatmem sessions list` lists them)\n")
    assert not db.exists()


def test_an_old_history_file_moves_to_the_data_directory_once(isolated_home: Path) -> None:
    old = isolated_home / ".config" / "chatmem" / "chatmem.db"
    with Store(old) as store:  # as an earlier chatmem left it, with a pending WAL
        store.sessions.create_session("trip", "window")
    raw = sqlite3.connect(old)
    raw.execute("PRAGMA journal_mode = WAL")
    raw.close()  # (a connection still open is another chatmem's: the move would wait)
    result = run("sessions", "list", "--json")
    new = isolated_home / ".local" / "share" / "chatmem" / "chatmem.db"
    assert result.exit_code == 0
    assert [s["name"] for s in json.loads(result.stdout)] == ["trip"]
    assert result.stderr == (f"moved the history file from {old} to {new} (the platform's data "
                             "directory)\n")
    assert new.is_file() and not old.exists()
    assert not list(old.parent.glob("chatmem.db*"))
    again = run("sessions", "list", "--json")
    assert again.stderr == "" and [s["name"] for s in json.loads(again.stdout)] == ["trip"]


def test_an_old_history_file_another_process_holds_open_is_not_moved(
        isolated_home: Path) -> None:
    """An older chatmem chatting there keeps writing to the file it opened: moved under
    it, every turn it stored after the move was lost. The move waits until it is closed."""
    import subprocess
    import sys

    old = isolated_home / ".config" / "chatmem" / "chatmem.db"
    with Store(old) as store:
        store.sessions.create_session("旧的", "window")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         f"c = sqlite3.connect({str(old)!r})\n"
         "c.execute('PRAGMA journal_mode = WAL'); c.execute('SELECT * FROM sessions').fetchall()\n"
         "print('open', flush=True); sys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        refused = run("sessions", "list", "--json")
        new = isolated_home / ".local" / "share" / "chatmem" / "chatmem.db"
        assert refused.exit_code != 0 and refused.stdout == ""
        assert refused.stderr == (f"error: {old} is open in another chatmem process (an older "
                                  f"version keeps it there); close it, and chatmem moves it "
                                  f"to {new}\n")
        assert old.exists() and not new.exists()
    finally:
        holder.communicate("\n", timeout=60)
    moved = run("sessions", "list", "--json")
    assert [s["name"] for s in json.loads(moved.stdout)] == ["旧的"] and new.is_file()


def test_an_old_file_never_overwrites_a_new_one(isolated_home: Path) -> None:
    old = isolated_home / ".config" / "chatmem" / "chatmem.db"
    new = isolated_home / ".local" / "share" / "chatmem" / "chatmem.db"
    with Store(old) as store:
        store.sessions.create_session("old", "window")
    with Store(new) as store:
        store.sessions.create_session("new", "window")
    result = run("sessions", "list", "--json")
    assert [s["name"] for s in json.loads(result.stdout)] == ["new"]
    # Its sessions are not read: the user is told where they are and how to bring them.
    assert result.stderr == (f"an older chatmem's history is still at {old} and is not read "
                             f"(this one is {new}): `chatmem sessions copy --from {old} --to "
                             f"{new}` brings its sessions here; then remove it\n")
    assert old.exists()
    copied = run("sessions", "copy", "--from", str(old), "--to", str(new))
    assert copied.exit_code == 0, copied.stderr
    old.unlink()
    again = run("sessions", "list", "--json")
    assert sorted(s["name"] for s in json.loads(again.stdout)) == ["new", "old"]
    assert again.stderr == ""


def test_an_explicit_db_is_never_moved(isolated_home: Path, tmp_path: Path) -> None:
    old = isolated_home / ".config" / "chatmem" / "chatmem.db"
    with Store(old) as store:
        store.sessions.create_session("old", "window")
    mine = tmp_path / "mine.db"
    assert run("ask", "hi", "--db", str(mine), "--provider", "scripted").exit_code == 0
    assert old.exists() and not (isolated_home / ".local" / "share" / "chatmem").exists()


def test_config_show_is_a_compact_table_with_effective_values(isolated_home: Path) -> None:
    config = isolated_home / ".config" / "chatmem" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('strategy = "tokens"\n[local]\nthreads = 1\n', encoding="utf-8")
    result = run("config", "show", env={"CHATMEM_PROVIDER": "local"})
    assert result.exit_code == 0, result.stderr
    lines = [line.rstrip() for line in result.stdout.splitlines()]
    assert lines[0] == f"config file   {config}"
    assert lines[1] == (f"history file  {isolated_home / '.local' / 'share' / 'chatmem'}"
                        "/chatmem.db")
    assert max(len(line) for line in lines[3:]) <= 80
    assert result.stdout.count(str(isolated_home)) == 2  # each path once, never per row
    rows = {line.split()[0]: line.split()[1:] for line in lines[3:] if line.strip()}
    assert rows["strategy"] == ["tokens", "file"]
    assert rows["local.threads"] == ["1", "file"]
    assert rows["provider"] == ["local", "env", "CHATMEM_PROVIDER"]
    assert rows["max_reply_tokens"] == ["256", "(the", "local", "model's", "default)"]
    assert rows["api_key"] == ["not", "set"]
