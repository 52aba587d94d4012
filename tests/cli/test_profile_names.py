"""A user profile's name is one profile however its letters were composed: `Zoë` typed as
NFC or NFD (macOS decomposes) names the same sessions and facts, as session names do."""

from __future__ import annotations

import sqlite3
import unicodedata
from pathlib import Path

from cli_runner import chat, invoke

from chatmem.config.settings import Settings

NFC = unicodedata.normalize("NFC", "Zoë")
NFD = unicodedata.normalize("NFD", "Zoë")


def users(db: Path) -> set[str]:
    with sqlite3.connect(db) as con:
        return {u for (u,) in con.execute('SELECT "user" FROM sessions UNION'
                                          ' SELECT "user" FROM facts WHERE "user" IS NOT NULL')}


def test_nfc_and_nfd_names_are_one_profile(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    chat(db, "z1", ["/remember --user city: Zürich", "hi"], env={"CHATMEM_USER": NFC}, code=0)
    chat(db, "z2", ["hi"], env={"CHATMEM_USER": NFD}, code=0)
    config = tmp_path / "config.toml"
    config.write_text(f'user = "{NFD}"\n', encoding="utf-8")
    chat(db, "z3", ["/remember --user city: 北京"], "--config", str(config), code=0)
    assert users(db) == {NFC}
    listed = invoke("facts", "list", "--user", NFD, "--db", str(db), code=0).stdout
    assert "北京 ← Zürich" in listed  # one fact, updated
    dry = invoke("forget-me", "--user", NFD, "--dry-run", "--db", str(db), code=0)
    assert "would erase 3 sessions" in dry.stderr and "1 fact" in dry.stderr


def test_settings_hold_the_composed_name() -> None:
    assert Settings(user=NFD).user == NFC


def test_a_history_holding_an_nfd_name_is_found_by_either_form(tmp_path: Path) -> None:
    """Written before names were normalized: its rows are read as they are, unmigrated."""
    db = tmp_path / "old.db"
    chat(db, "z", ["/remember --user 城市: 杭州", "hi"], env={"CHATMEM_USER": "x"}, code=0)
    with sqlite3.connect(db) as con:
        con.execute('UPDATE sessions SET "user" = ?', [NFD])
        con.execute('UPDATE facts SET "user" = ? WHERE "user" IS NOT NULL', [NFD])
    for typed in (NFC, NFD):
        assert "杭州" in invoke("facts", "list", "--user", typed, "--db", str(db), code=0).stdout
        dry = invoke("forget-me", "--user", typed, "--dry-run", "--db", str(db), code=0)
        assert "would erase 1 session" in dry.stderr and "1 fact" in dry.stderr
    # A new profile fact updates the stored one instead of starting a second profile.
    chat(db, "z", ["/remember --user 城市: 上海"], env={"CHATMEM_USER": NFC}, code=0)
    listed = invoke("facts", "list", "--user", NFC, "--db", str(db), code=0).stdout
    assert "上海 ← 杭州" in listed
    assert invoke("forget-me", "--user", NFC, "--yes", "--db", str(db), code=0)
    assert invoke("facts", "list", "--db", str(db), code=0).stdout.count("上海") == 0
