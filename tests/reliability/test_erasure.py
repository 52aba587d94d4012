"""`sessions delete` and `facts forget --purge` leave no byte of the content behind.

The test greps the raw bytes of the history file, its WAL and its shm. Finding 8
of issue 13: purge used to leave an extracted fact's value in the message it was
said in, in turns.input and turns.context and in the full-text index.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli_runner import chat, invoke
from file_hash import file_bytes
from matches import matches

from chatmem.store import Store

SECRET_NAME = "Zebulon Quaxley"
SECRET_CITY = "杭州西湖区"


def make_history(tmp_path: Path, config: str = "") -> tuple[Path, list[str]]:
    db = tmp_path / "h.db"
    args = ["--config", str(tmp_path / "config.toml")]
    (tmp_path / "config.toml").write_text(config, encoding="utf-8")
    chat(db, "keep", "hello there, a session that stays\n", "-s", "summary", *args, code=0)
    chat(db, "gone", f"my name is {SECRET_NAME}\nI live in {SECRET_CITY}\n"
                     f"remember {SECRET_NAME} please\nwhat else?\n", "-s", "summary-buffer",
         *args, code=0)
    chat(db, "gone", "and one more\n", "-s", "entity", *args, code=0)
    assert SECRET_NAME.encode() in file_bytes(db)
    return db, args


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return make_history(tmp_path)[0]


def test_sessions_delete_leaves_no_byte_of_the_session(history: Path) -> None:
    result = invoke("sessions", "delete", "gone", "--yes", "--db", str(history))
    assert result.exit_code == 0, result.stderr
    data = file_bytes(history)
    for needle in (SECRET_NAME, SECRET_CITY, "Zebulon", "my name is", "what else?",
                   "and one more"):
        assert needle.encode() not in data, needle
    assert b"a session that stays" in data  # the other session is untouched
    assert sqlite3.connect(history).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_sessions_delete_erases_a_large_session_without_rewriting_the_file(
        tmp_path: Path) -> None:
    """secure_delete zeroes the erased rows and the emptied WAL holds no older copy, so
    delete no longer VACUUMs (which rewrote a 170 MB file, and needed as much free disk, to
    delete a tiny session): the freed pages stay in the file, zeroed."""
    db = tmp_path / "h.db"
    for name, line in (("keep", "keepsake {i} stays"), ("gone", "Qorvath{i} 秘密杭州{i} ORD-{i}")):
        lines = tmp_path / f"{name}.jsonl"
        lines.write_text("".join(
            json.dumps({"role": role, "content": line.format(i=i) + " words" * (i % 7 * 40)},
                       ensure_ascii=False) + "\n"
            for i in range(300) for role in ("user", "assistant")), encoding="utf-8")
        invoke("sessions", "import", str(lines), name, "--db", str(db), code=0)
    assert b"Qorvath" in file_bytes(db) and "秘密杭州".encode() in file_bytes(db)
    pages = sqlite3.connect(db).execute("PRAGMA page_count").fetchone()[0]
    invoke("sessions", "delete", "gone", "--yes", "--db", str(db), code=0)
    data = file_bytes(db)
    for needle in ("Qorvath", "qorvath", "秘密", "杭州"):
        assert needle.encode() not in data, needle
    assert b"keepsake" in data
    wal = db.with_name(db.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    with sqlite3.connect(db) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # Not rewritten: the erased session's pages are free, still in the file.
        assert check.execute("PRAGMA page_count").fetchone()[0] >= pages
        assert check.execute("PRAGMA freelist_count").fetchone()[0] > 0


def test_profile_facts_outlive_the_session_and_purge_erases_them(tmp_path: Path) -> None:
    """With user_facts on, facts belong to the user's profile: delete names them, purge erases."""
    db, args = make_history(tmp_path, "user_facts = true\n")
    result = invoke("sessions", "delete", "gone", "--yes", "--db", str(db), *args)
    assert result.exit_code == 0, result.stderr
    profile = json.loads(invoke("facts", "list", "--json", "--db", str(db), *args).stdout)
    assert [(f["key"], f["scope"], f["owner"]) for f in profile] == [
        ("name", "user", "user default"), ("city", "user", "user default")]
    for needle in ("my name is", "what else?"):
        assert needle.encode() not in file_bytes(db), needle
    for key in ("name", "city"):
        result = invoke("facts", "forget", key, "--purge", "--db", str(db), *args)
        assert result.exit_code == 0, result.stderr
    data = file_bytes(db)
    for needle in (SECRET_NAME, SECRET_CITY, "Zebulon"):
        assert needle.encode() not in data, needle


def test_facts_forget_purge_replaces_every_copy_of_the_value(history: Path) -> None:
    with Store(history) as store:
        [fact] = [f for f in store.facts.facts(session_id=store.sessions.session("gone").id)
                  if f.value == SECRET_NAME]
    result = invoke("facts", "forget", str(fact.id), "--purge",
                    "--db", str(history))
    assert result.exit_code == 0, result.stderr
    data = file_bytes(history)
    assert SECRET_NAME.encode() not in data
    assert SECRET_NAME.lower().encode() not in data
    with Store(history) as store:
        session = store.sessions.session("gone")
        contents = [m.content for m in store.history.messages(session.id)]
        assert contents[0] == "my name is [forgotten]"
        assert list(matches(store, session.id, "Zebulon")) == []
        # The rest of the conversation is kept, and the session goes on.
        assert f"I live in {SECRET_CITY}" in contents
    chat(history, "gone", "are you there?\n", "-s", "entity", code=0)
    assert sqlite3.connect(history).execute("PRAGMA integrity_check").fetchone() == ("ok",)
