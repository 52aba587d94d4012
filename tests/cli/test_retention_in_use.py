"""Retention applied when a command starts never erases the session that command goes on in
(named, or the most recent with -c): a restored archive's session, idle for a year, was
erased by the very `ask` that named it, which then started an empty one."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cli_runner import invoke, repl

from chatmem.store import Store

NOW = datetime.now(UTC)


def chat(db: Path, name: str, line: str, *, days_ago: float) -> None:
    moment = NOW - timedelta(days=days_ago)
    with Store(db, key=os.environ.get("CHATMEM_KEY"), clock=lambda: moment) as store:
        repl(store, name, [line])


@pytest.fixture
def aged(tmp_path: Path) -> tuple[Path, Path]:
    """old: idle 45 days; 最近: 5 days; a config keeping sessions 30 days idle."""
    db, config = tmp_path / "h.db", tmp_path / "config.toml"
    chat(db, "old", "My cat is Tom.", days_ago=45)
    chat(db, "最近", "我的狗叫小白。", days_ago=5)
    config.write_text("retention_days = 30\n")
    return db, config


def sessions(db: Path) -> dict[str, int]:
    listed = json.loads(invoke("sessions", "list", "--json", "--db", str(db)).stdout)
    return {row["name"]: row["messages"] for row in listed}


def ask(db: Path, config: Path, *args: str) -> str:
    done = invoke("ask", *args, "--db", str(db), "--config", str(config),
                  "--provider", "scripted")
    assert done.exit_code == 0, done.stderr
    return done.stderr


def test_asking_in_a_session_past_its_retention_goes_on_in_it(aged: tuple[Path, Path]) -> None:
    db, config = aged
    said = ask(db, config, "old", "what is my cat?")
    assert "retention:" not in said
    assert sessions(db) == {"old": 4, "最近": 2}
    # Used now: the next start in another session keeps it too.
    assert "retention:" not in ask(db, config, "最近", "还记得吗？")
    assert sessions(db) == {"old": 4, "最近": 4}


def test_continue_goes_on_in_the_most_recent_even_past_its_retention(
        aged: tuple[Path, Path]) -> None:
    db, config = aged
    config.write_text("retention_days = 3\n")
    said = ask(db, config, "-c", "他叫什么？")
    assert "past their retention (old)" in said
    assert sessions(db) == {"最近": 4}


def test_a_session_opened_and_left_is_renewed(aged: tuple[Path, Path]) -> None:
    db, config = aged
    opened = invoke("chat", "old", "--db", str(db), "--config", str(config),
                    "--provider", "scripted", input="")
    assert opened.exit_code == 0, opened.stderr
    assert "retention:" not in opened.stderr
    assert "retention:" not in ask(db, config, "最近", "还在吗？")
    assert sessions(db) == {"old": 2, "最近": 4}
