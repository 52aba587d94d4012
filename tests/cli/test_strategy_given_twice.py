"""`-s` given twice: Click kept the last, so `chatmem ask t hi -s window -s summary` ran
summary and said nothing of the window asked for first. Two strategies are refused in one
line naming both, before anything is stored; the same one twice says no more than once."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run

from chatmem.store import Store


@pytest.mark.parametrize(("twice", "named"), [
    (["-s", "window", "-s", "summary"], "-s window and -s summary"),
    (["--strategy=window", "-ssummary"], "--strategy window and -s summary"),
    (["-s", "窗口", "--strategy", "window:k=2"], "-s 窗口 and --strategy window:k=2"),
], ids=["short", "long-and-attached", "zh"])
@pytest.mark.parametrize("command", ["ask", "chat"])
def test_two_strategies_are_refused_naming_both(tmp_path: Path, twice: list[str], named: str,
                                                command: str) -> None:
    db = tmp_path / "h.db"
    words = ["t", "你好"] if command == "ask" else ["t"]
    done = run(db, command, *words, "--provider", "scripted", *twice, input="你好\n")
    assert done.exit_code == 2, done.stderr
    assert done.stderr == f"error: --strategy must be given once, not as {named}\n"
    if db.exists():
        with Store(db) as store:
            assert store.sessions.find_session("t") is None


def test_the_same_strategy_twice_runs(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    run(db, "ask", "t", "hi", "--provider", "scripted", "-s", "window", "-s", "window", code=0)
    with Store(db) as store:
        assert store.sessions.session("t").strategy == "window"
