"""A replaced turn (/retry, /edit-last) leaves no gap in the history's turn numbers."""

from __future__ import annotations

from pathlib import Path

from cli_runner import invoke, repl

from chatmem.store import Store


def test_the_replacement_takes_the_replaced_turns_number(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    _, err = repl(db, "间隔", ["第一个问题", "第二个问题", "/retry", "/edit-last 第二个问题改过",
                              "第三个问题"], strategy="window")
    assert "error" not in err
    with Store(db) as store:
        session = store.sessions.session("间隔").id
        live = store.history.messages(session)
        assert [(m.turn, m.content) for m in live if m.role == "user"] == [
            (1, "第一个问题"), (2, "第二个问题改过"), (3, "第三个问题")]
        assert store.history.turn_count(session) == 3
    listed = invoke("sessions", "list", "--db", str(db))
    assert listed.exit_code == 0
    assert [line.split()[2:4] for line in listed.stdout.splitlines() if "间隔" in line] == [
        ["6", "3"]]  # messages, turns
    # Forking at turn 2 keeps turns 1 and 2, as numbered in the history.
    forked = invoke("sessions", "fork", "间隔", "分支", "--at-turn", "2", "--db", str(db))
    assert forked.exit_code == 0, forked.stderr
    with Store(db) as store:
        branch = store.history.messages(store.sessions.session("分支").id)
    assert [m.content for m in branch if m.role == "user"] == ["第一个问题", "第二个问题改过"]
