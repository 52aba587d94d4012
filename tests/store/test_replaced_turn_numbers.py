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


def _turns_with_failures(store: Store, count: int) -> int:
    """`count` requests of one session, every tenth one failed (no history turn), written
    straight into the table: only their rows matter to numbering them."""
    session = store.sessions.create_session("长", strategy="window").id
    rows, turn = [], 0
    for number in range(1, count + 1):
        failed = number % 10 == 0
        turn += 0 if failed else 1
        rows.append((session, number, None if failed else turn,
                     "failed" if failed else "ok", f"问题 {number}",
                     f"2026-01-01T00:00:{number:06d}"))
    store.db.conn.executemany(
        "INSERT INTO turns (session_id, number, history_turn, status, input, context,"
        " strategy, created_at) VALUES (?, ?, ?, ?, ?, '{}', 'window', ?)", rows)
    return session


def test_numbering_a_failed_request_reads_in_proportion_to_the_session_not_its_square(
        tmp_path: Path) -> None:
    from meter import metered

    work = []
    for count in (400, 4000):
        with Store(tmp_path / f"{count}.db") as store:
            session = _turns_with_failures(store, count)
            # The last failed request was attempted as the turn after the one before it.
            last_failed = count - count % 10 if count % 10 else count
            attempted = last_failed - last_failed // 10 + 1
            with metered(store) as meter:
                found = store.turns.at_turn(session, attempted)
                listed = store.turns.turn(session, last_failed)
            assert (found.turn, listed.turn, listed.status) == (attempted, attempted, "failed")
            work.append(meter.steps)
    # A max() over the earlier requests once per failed one grew with the square of the
    # session: ten times the requests read about a hundred times the rows.
    small, large = work
    assert large < small * 20, work
