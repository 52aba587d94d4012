"""kill -9 inside the write that starts a folded log over between turns (the chat folds
the log after every FOLD_EVERY turns and starts it over there, sqlite_files.restart_log):
every turn committed before it is kept, the file passes its checks, the next chat goes on."""

from __future__ import annotations

from pathlib import Path

import pytest
from checks import assert_file_consistent, rows
from procs import run_chatmem, run_in_process

from chatmem.engine.upkeep import FOLD_EVERY

INPUT = "".join(f"turn {i}: my order ORD-{i} ships to Porto, 我住在杭州第{i}号\n"
                for i in range(FOLD_EVERY))


def chat(db: Path) -> list[str]:
    return ["chat", "s", "--db", str(db), "--provider", "scripted", "-s", "retrieval"]


@pytest.mark.parametrize("after", [0, 1, 2], ids=["before-write", "before-commit", "after"])
def test_kill_9_while_the_folded_log_starts_over_keeps_every_turn(
        tmp_path: Path, after: int) -> None:
    """Killed just before the restart's write (its lock held), before its COMMIT, and
    just after it (the log started over)."""
    home, db = tmp_path / "home", tmp_path / "历史.db"
    home.mkdir()
    done = run_chatmem(chat(db), home, INPUT, CHATMEM_TEST_KILL_AT_SQL="PRAGMA user_version = ",
                       CHATMEM_TEST_KILL_AFTER=str(after))
    assert done.code == -9, done.stderr
    assert_file_consistent(db)
    assert rows(db, "SELECT count(*) FROM messages")[0][0] == 2 * FOLD_EVERY
    next_chat = run_in_process(chat(db), home, "and one more turn 再来一轮\n")
    assert next_chat.code == 0, next_chat.stderr
    assert_file_consistent(db)
    assert rows(db, "SELECT count(*) FROM messages")[0][0] == 2 * FOLD_EVERY + 2
