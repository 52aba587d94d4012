"""Several chat processes on one history file, started at the same instant.

Guarantee: no error reaches the user, no turn is lost, turn numbers and
message positions stay unique and gap-free, whether the file is new or not
and whether the processes share a session or not.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from procs import integrity, message_positions, start_together, turn_rows

from chatmem.store import Store


def script(tag: str, turns: int) -> str:
    return "".join(f"{tag} says line {i} 订单 {i}\n" for i in range(turns))


def assert_session_intact(db: Path, session: str, inputs: list[str]) -> None:
    """Every input stored once, each followed by its reply; numbers gap-free."""
    messages = message_positions(db, session)
    assert [p for p, _, _ in messages] == list(range(1, len(messages) + 1))
    roles = [r for _, r, _ in messages]
    assert roles == ["user", "assistant"] * (len(messages) // 2)
    users = sorted(c for _, r, c in messages if r == "user")
    assert users == sorted(inputs)
    turns = turn_rows(db, session)
    assert [n for n, _ in turns] == list(range(1, len(turns) + 1))
    assert [h for _, h in turns] == list(range(1, len(turns) + 1))


def run_chats(tmp_path: Path, processes: int, same_session: bool, new_file: bool,
              turns: int, strategy: str = "window") -> None:
    db = tmp_path / "shared.db"
    if not new_file:
        Store(db).close()
    names = ["s"] * processes if same_session else [f"s{i}" for i in range(processes)]
    tags = [f"p{i}" for i in range(processes)]
    commands = [["chat", name, "--db", str(db), "--provider", "scripted", "-s", strategy]
                for name in names]
    done = start_together(commands, [script(t, turns) for t in tags], tmp_path,
                          tmp_path / "gate")
    failures = [(d.code, d.stderr.strip()) for d in done if d.code != 0 or "error" in d.stderr]
    assert failures == [], f"{len(failures)} of {processes} processes failed: {failures}"
    assert integrity(db) == "ok"
    for name, group in itertools.groupby(sorted(zip(names, tags, strict=True)),
                                         key=lambda pair: pair[0]):
        inputs = [line for _, tag in group for line in script(tag, turns).splitlines()]
        assert_session_intact(db, name, inputs)


@pytest.mark.parametrize("same_session", [False, True], ids=["own-sessions", "one-session"])
def test_four_chats_starting_together_on_a_new_file_keep_every_turn(
    tmp_path: Path, same_session: bool
) -> None:
    run_chats(tmp_path, 4, same_session, new_file=True, turns=8)


def test_two_chats_starting_together_on_one_new_session_both_keep_every_turn(
    tmp_path: Path,
) -> None:
    run_chats(tmp_path, 2, same_session=True, new_file=True, turns=8)


@pytest.mark.slow
@pytest.mark.parametrize("processes", [2, 4])
@pytest.mark.parametrize("same_session", [False, True], ids=["own-sessions", "one-session"])
@pytest.mark.parametrize("new_file", [True, False], ids=["new-file", "existing-file"])
def test_many_turns_from_several_processes_are_all_kept(
    tmp_path: Path, processes: int, same_session: bool, new_file: bool
) -> None:
    run_chats(tmp_path, processes, same_session, new_file, turns=100)


@pytest.mark.slow
@pytest.mark.parametrize("rounds", range(10))
def test_creating_a_new_file_from_four_processes_repeatedly(tmp_path: Path, rounds: int) -> None:
    run_chats(tmp_path, 4, same_session=True, new_file=True, turns=3)


def summary_folds(db: Path, session: str) -> tuple[int, int]:
    """(message ids in more than one summary version, versions covering an older point)."""
    from checks import rows

    versions = rows(db, "SELECT covered_ids FROM summaries s JOIN sessions x ON x.id ="
                        " s.session_id WHERE x.name = ? ORDER BY s.version", (session,))
    seen: dict[int, int] = {}
    backwards, last = 0, 0
    for (covered,) in versions:
        ids = json.loads(covered)
        for message_id in ids:
            seen[message_id] = seen.get(message_id, 0) + 1
        if ids and max(ids) < last:
            backwards += 1
        last = max([last, *ids])
    return sum(1 for n in seen.values() if n > 1), backwards


@pytest.mark.parametrize("processes", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_summary_buffer_writers_on_one_session_fold_each_turn_once(
    tmp_path: Path, processes: int
) -> None:
    db = tmp_path / "shared.db"
    Store(db).close()
    turns = 60 if processes == 2 else 100
    commands = [["chat", "s", "--db", str(db), "--provider", "scripted", "-s",
                 "summary-buffer:max_tokens=300"]] * processes
    done = start_together(commands, [script(f"p{i}", turns) for i in range(processes)],
                          tmp_path, tmp_path / "gate")
    assert [d.code for d in done] == [0] * processes, [d.stderr for d in done]
    refolded, backwards = summary_folds(db, "s")
    assert (refolded, backwards) == (0, 0), (
        f"{refolded} message ids in more than one summary version, "
        f"{backwards} versions cover an older point than the one before")
