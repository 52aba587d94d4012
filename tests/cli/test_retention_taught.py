"""A prune and retention at chat start say which profile facts an erased session taught.

Review: `sessions delete old` says "2 facts it taught the profile of user default stay (name,
city)"; `sessions prune`, its --dry-run and --json, and the retention notice at chat start
erased the same session and said nothing, so the user thought name=Zebulon went with it.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cli_runner import invoke, repl

from chatmem.store import Store

pytestmark = pytest.mark.usefixtures("history_key")
NOW = datetime.now(UTC)
TAUGHT = ("2 facts session old taught the profile of user default {} (name, city):"
          " `chatmem facts forget KEY --purge` erases one")


@pytest.fixture
def taught(tmp_path: Path) -> Path:
    """old (idle 45 days) taught the profile name and city; recent (5 days) taught nothing."""
    db = tmp_path / "h.db"
    for name, lines, days in (("old", ["My name is Zebulon", "I live in Oslo"], 45),
                              ("recent", ["hello there"], 5)):
        moment = NOW - timedelta(days=days)
        with Store(db, key=os.environ.get("CHATMEM_KEY"), clock=lambda m=moment: m) as store:
            repl(store, name, lines, strategy="entity", user_facts=True)
    return db


def _keys(db: Path) -> list[str]:
    listed = json.loads(invoke("facts", "list", "--json", "--db", str(db), code=0).stdout)
    return sorted(f["key"] for f in listed if "key" in f)


def test_a_prune_says_which_profile_facts_stay(taught: Path) -> None:
    assert _keys(taught) == ["city", "name"]
    dry = invoke("sessions", "prune", "--older-than", "30d", "--dry-run", "--db", str(taught),
                 code=0)
    assert dry.stderr.splitlines()[-1] == TAUGHT.format("would stay")
    listed = json.loads(invoke("sessions", "prune", "--older-than", "30d", "--dry-run",
                               "--json", "--db", str(taught), code=0).stdout)
    assert [(s["name"], s["profile_facts"]) for s in listed["sessions"]] == [
        ("old", ["name", "city"])]
    done = invoke("sessions", "prune", "--older-than", "30d", "--db", str(taught), code=0)
    assert done.stderr.splitlines()[-1] == TAUGHT.format("stay")
    assert _keys(taught) == ["city", "name"]


def test_retention_at_chat_start_says_which_profile_facts_stay(taught: Path,
                                                               tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("retention_days = 30\n")
    started = invoke("chat", "recent", "--db", str(taught), "--config", str(config),
                     "--provider", "scripted", input="hello again\n", code=0)
    said = " ".join(started.stderr.split())
    assert "retention: erased 1 session (4 messages) past their retention (old)" in said
    assert TAUGHT.format("stay") in said


def test_a_delete_words_the_profile_facts_that_stay_as_a_prune_does(taught: Path) -> None:
    done = invoke("sessions", "delete", "old", "--yes", "--db", str(taught), code=0)
    assert done.stderr.splitlines()[-1] == TAUGHT.format("stay")
    assert _keys(taught) == ["city", "name"]
