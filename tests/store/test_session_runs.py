"""`SessionRuns`: the id ranges of one conversation's messages in a SQLite history."""

from __future__ import annotations

from pathlib import Path

from chatmem.store import Store
from chatmem.store.session_runs import MOST_RUNS, SessionRuns


def test_runs_cover_every_message_newest_first_and_older_ones_merge(tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        mine = store.sessions.create_session("mine", "window", {})
        other = store.sessions.create_session("other", "window", {})
        runs = SessionRuns()
        assert runs.ranges(store.db, mine.id) == ([], 0)
        for n in range(3):
            store.history.import_messages(other.id, [{"role": "user", "content": f"b {n}"}])
            store.history.import_messages(mine.id, [{"role": "user", "content": f"a {n}"}] * 2)
        ids = [m.id for m in store.history.messages(mine.id)]
        ranges, last = runs.ranges(store.db, mine.id)
        assert last == 6 and ranges == [(ids[4], ids[5]), (ids[2], ids[3]), (ids[0], ids[1])]
        # Extended by what is added since; a message right after its run joins it.
        store.history.import_messages(mine.id, [{"role": "user", "content": "阿丽丝"}])
        ranges, last = runs.ranges(store.db, mine.id)
        assert last == 7 and ranges[0] == (ids[4], ids[5] + 1)
        for n in range(2 * MOST_RUNS):
            store.history.import_messages(mine.id, [{"role": "user", "content": f"c {n}"}])
            store.history.import_messages(other.id, [{"role": "user", "content": f"d {n}"}])
        ranges, last = runs.ranges(store.db, mine.id)
        ids = [m.id for m in store.history.messages(mine.id)]
        assert len(ranges) == MOST_RUNS and last == len(ids)
        assert ranges[-1][0] == ids[0] and ranges[0][1] == ids[-1]
        assert all(any(lo <= i <= hi for lo, hi in ranges) for i in ids)
        assert ranges == sorted(ranges, reverse=True)


def test_a_file_opened_again_reuses_what_the_process_read_and_a_new_file_is_read_anew(
    tmp_path: Path,
) -> None:
    """A server opens the history for each request: a long conversation's runs are read
    once per process, not per request; another file at the same path is not taken for it."""
    from meter import metered

    path = tmp_path / "h.db"

    def fill(lines: int) -> list[int]:
        with Store(path) as store:
            mine = store.sessions.create_session("mine", "window", {})
            other = store.sessions.create_session("other", "window", {})
            store.history.import_messages(mine.id, [{"role": "user", "content": "a"}] * lines)
            store.history.import_messages(other.id, [{"role": "user", "content": "b"}])
            store.history.import_messages(mine.id, [{"role": "user", "content": "c"}])
            assert store.db.session_word_counts(["a"], mine.id, 10**6) is not None
            return [m.id for m in store.history.messages(mine.id)]

    ids = fill(500)
    with Store(path) as store:
        mine = store.sessions.find_session("mine").id
        with metered(store) as meter:
            ranges, last = SessionRuns.of(str(path)).ranges(store.db, mine)
        assert ranges == [(ids[-1], ids[-1]), (ids[0], ids[-2])] and last == 501
        assert meter.rows < 10
    path.unlink()
    ids = fill(3)
    with Store(path) as store:
        ranges, last = SessionRuns.of(str(path)).ranges(
            store.db, store.sessions.find_session("mine").id)
        assert ranges == [(ids[-1], ids[-1]), (ids[0], ids[-2])] and last == 4
