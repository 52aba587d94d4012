"""A history key set for a PostgreSQL history is refused, not ignored.

CHATMEM_KEY (or key_command) encrypts a SQLite file; a PostgreSQL database is protected
by its server. Ignored, the key let its user believe the chats were encrypted: the
command is refused in one line (as for a plain file under a key), and nothing is stored.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_runner import chat, invoke

from chatmem.store import Store


@pytest.mark.parametrize("where", ["env", "key_command"])
def test_a_key_for_a_postgresql_history_is_refused_and_nothing_is_stored(
        pg_url: str, tmp_path: Path, where: str) -> None:
    config = tmp_path / "config.toml"
    command = f"{sys.executable} -c 'print(1234)'"
    config.write_text(f'key_command = "{command}"\n' if where == "key_command" else "",
                      encoding="utf-8")
    env = {"CHATMEM_KEY": "a secret phrase" if where == "env" else None}
    done = chat(pg_url, "t", ["hello"], "--config", str(config), env=env)
    assert done.exit_code != 0
    source = "$CHATMEM_KEY" if where == "env" else "key_command"
    assert done.stderr.startswith(f"error: {source} is set, but a key encrypts a SQLite")
    assert len(done.stderr.strip().splitlines()) == 1
    assert "a secret phrase" not in done.stderr and "1234" not in done.stderr
    listed = invoke("sessions", "list", "--db", pg_url, "--config", str(config), env=env)
    assert listed.exit_code == done.exit_code
    with Store(pg_url) as store:
        assert store.sessions.list_sessions() == []


def test_without_a_key_the_same_history_opens(pg_url: str, tmp_path: Path) -> None:
    chat(pg_url, "t", ["hello"], env={"CHATMEM_KEY": None}, code=0)


def test_the_key_of_an_encrypted_file_copied_to_or_from_postgresql_is_the_files(
        pg_url: str, tmp_path: Path) -> None:
    """`sessions copy` between an encrypted file and a PostgreSQL history (README: how a
    history moves) sets the key for the file: the database side does not refuse it."""
    pytest.importorskip("sqlcipher3", reason="chatmem[encrypt] is not installed")
    db = str(tmp_path / "locked.db")
    env = {"CHATMEM_KEY": "a secret phrase"}
    chat(db, "trip", ["我住在杭州"], env=env, code=0)
    invoke("sessions", "copy", "--from", db, "--to", pg_url, "trip", env=env, code=0)
    back = str(tmp_path / "back.db")
    invoke("sessions", "copy", "--from", pg_url, "--to", back, "trip", env=env, code=0)
    with Store(back, key="a secret phrase") as store:
        said = store.history.messages(store.sessions.session("trip").id)
    assert said[0].content == "我住在杭州"
