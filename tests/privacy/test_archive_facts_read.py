"""An archive says how far the fact extractor had read each session (manifest.json's
facts_read_turns), and `sessions import ARCHIVE.zip` marks exactly those turns read: turns it
had not read (a failed extraction) are read after the import, never lost; an archive written
before it said marks nothing, and reading the restored turns again changes no fact."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path
from typing import Any

from archive_edits import with_member_changed
from chat_server import ChatServer
from cli_runner import chat, run

from chatmem.store import Store

LIVE = "SELECT key, value FROM facts WHERE deleted_at IS NULL"


def live_facts(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as con:
        return sorted(con.execute(LIVE).fetchall())


def extractor_state(db: Path, session: str) -> dict[str, object]:
    with Store(db) as store:
        return store.memory.strategy_state(store.sessions.session(session).id, "facts")


def listed(archive: Path) -> list[dict[str, object]]:
    with zipfile.ZipFile(archive) as zf:
        return json.loads(zf.read("manifest.json"))["sessions"]


def without_field(archive: Path, to: Path) -> Path:
    """`archive` as an export written before the manifest said what the extractor read."""
    def unread(manifest: dict[str, Any]) -> None:
        for entry in manifest["sessions"]:
            del entry["facts_read_turns"]

    return with_member_changed(archive, to, "manifest.json", unread)


def test_turns_the_source_extractor_had_not_read_are_read_after_the_import(
        tmp_path: Path, chat_server: ChatServer) -> None:
    a, b, zipped = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "all.zip"
    config = tmp_path / "config.toml"
    config.write_text(f'base_url = "{chat_server.base_url}"\nmodel = "m"\nmax_retries = 0\n',
                      encoding="utf-8")
    # Every extraction call gets prose, not JSON: the extractor stays at turn 0.
    chat(a, "ef", ["My name is Zed.", "我住在杭州。"], "--provider", "openai", "-s", "entity",
         "--config", str(config), env={"OPENAI_API_KEY": "k"}, code=0)
    assert extractor_state(a, "ef")["done_turn"] == 0
    run(a, "sessions", "export", "--all", "-o", str(zipped), code=0)
    assert [s["facts_read_turns"] for s in listed(zipped)] == [0]

    run(b, "sessions", "import", str(zipped), code=0)
    assert extractor_state(b, "ef") == {}
    chat(b, "ef", ["hi"], code=0)
    assert live_facts(b) == [("name", "Zed"), ("城市", "杭州")]


def test_turns_the_source_extractor_had_read_are_marked_read(tmp_path: Path) -> None:
    a, b, zipped = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "all.zip"
    chat(a, "ef", ["My name is Ada.", "I live in Paris."], "-s", "entity", code=0)
    run(a, "facts", "forget", "city", "--session", "ef", code=0)
    run(a, "sessions", "export", "--all", "-o", str(zipped), code=0)
    assert [s["facts_read_turns"] for s in listed(zipped)] == [2]

    run(b, "sessions", "import", str(zipped), code=0)
    state = extractor_state(b, "ef")
    assert (state["done_turn"], state["behind"]) == (2, 0)
    chat(b, "ef", ["hi"], code=0)
    assert live_facts(b) == [("name", "Ada")]


def test_an_archive_written_before_marks_nothing_and_a_read_again_changes_no_fact(
        tmp_path: Path) -> None:
    """The extractor reads the restored turns again: a value set after them, and a fact
    forgotten after them, stay as facts.json restored them (chatmem.memory.later_facts)."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    chat(a, "ef", ["My name is Ada.", "I live in Paris.", "My dog is Rex.",
                   "/remember city: Lyon"], "-s", "entity", code=0)
    run(a, "facts", "forget", "dog", "--session", "ef", code=0)
    run(a, "sessions", "export", "--all", "-o", str(tmp_path / "new.zip"), code=0)
    zipped = without_field(tmp_path / "new.zip", tmp_path / "old.zip")

    run(b, "sessions", "import", str(zipped), code=0)
    assert extractor_state(b, "ef") == {}
    assert live_facts(b) == [("city", "Lyon"), ("name", "Ada")]
    chat(b, "ef", ["hi"], code=0)
    assert extractor_state(b, "ef")["done_turn"] == 4
    assert live_facts(b) == [("city", "Lyon"), ("name", "Ada")]


def test_a_manifest_count_that_is_no_whole_number_is_one_line(tmp_path: Path) -> None:
    a, b, zipped = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "all.zip"
    chat(a, "ef", ["My name is Ada."], "-s", "entity", code=0)
    run(a, "sessions", "export", "--all", "-o", str(zipped), code=0)
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(zipped) as old, zipfile.ZipFile(bad, "w") as new:
        for info in old.infolist():
            data = old.read(info)
            if info.filename == "manifest.json":
                manifest = json.loads(data)
                manifest["sessions"][0]["facts_read_turns"] = "all"
                data = json.dumps(manifest).encode()
            new.writestr(info, data)
    result = run(b, "sessions", "import", str(bad), code=None)
    assert result.exit_code != 0 and result.stderr.count("\n") == 1
    assert "manifest.json: session 'ef': 'facts_read_turns'" in result.stderr
    assert "'all'" in result.stderr
