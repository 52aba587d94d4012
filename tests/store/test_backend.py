"""The store picks its backend by location and speaks the backend's dialect through it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chatmem import fts, install_hint
from chatmem.errors import StoreError
from chatmem.store import Store
from chatmem.store.sqlite_backend import SqliteBackend

URL = "postgresql://chat:s3cret-pw@localhost:5432/history"


@pytest.mark.parametrize("url", [URL, URL.replace("postgresql://", "postgres://")])
def test_a_postgres_url_without_the_extra_names_the_extra_not_the_password(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # the extra is not installed
    with pytest.raises(StoreError) as raised:
        Store(url)
    assert install_hint("postgres") in str(raised.value)
    assert "s3cret-pw" not in str(raised.value)


def test_a_key_with_a_postgres_url_is_refused_before_connecting() -> None:
    with pytest.raises(StoreError) as raised:
        Store(URL, key="k")
    assert "s3cret-pw" not in str(raised.value)


def test_a_path_opens_sqlite(tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        assert isinstance(store.db, SqliteBackend)
        assert (store.db.kind, store.db.location) == ("sqlite", str(tmp_path / "h.db"))
        assert store.location == str(tmp_path / "h.db")


def test_index_words_replaces_an_entry_and_scores_rank_the_better_match(tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        session = store.sessions.create_session("s", "window")
        first, second = store.history.import_messages(session.id, [
            {"role": "user", "content": "walnut walnut tea"},
            {"role": "assistant", "content": "我们去杭州 walnut"}])
        with store.write():
            store.db.index_words([(first, fts.index_text("only oolong now"))])
        assert store.db.count_words_matches(["walnut"], 10)[0] == 1
        assert store.db.count_words_matches(["oolong"], 10)[0] == 1
        scores = store.db.word_scores(["杭州", "oolong"], session.id, None, 10)
        assert {(i, p) for i, p, _ in scores} == {(first, 1), (second, 2)}
        assert store.db.word_scores(["oolong"], session.id, 1, 10) == []  # before turn 1
        assert store.db.word_scores(["oolong"], None, None, 10)[0][:2] == (first, 1)
        with store.write():
            store.db.unindex_words([first, second])
        assert store.db.word_scores(["杭州", "oolong"], None, None, 10) == []
        assert store.db.has_column("messages", "gap_s")
        assert not store.db.has_column("messages", "no_such_column")
        assert not store.db.has_column("no_such_table", "id")


FOLD_ON_A_FULL_DISK = """
import resource, sys
from pathlib import Path
from chatmem.store import Store
from chatmem.store.sqlite_files import file_identity, was_found_full
db = Path(sys.argv[1])
with Store(db) as store:
    store.clear_log()
    size = db.stat().st_size
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 65536, size + 65536))  # the disk full
    with store.db.write():  # the log grows; the file cannot take its pages
        store.db.execute("CREATE TABLE scratch (b BLOB)")
        store.db.execute("INSERT INTO scratch VALUES (zeroblob(?))", [size // 2 + 65536])
    store.tidy(fold_log=True)
    print(was_found_full(file_identity(db)))
"""


def test_a_fold_between_turns_on_a_full_disk_is_no_error_and_loses_nothing(
        tmp_path: Path) -> None:
    """A passive fold of the log (every 8 turns) on a full disk: the turn just shown was
    followed by "error: database error: disk I/O error" (found in a day of use under
    `ulimit -f`). What the log holds stays stored, and the next turn checks for room."""
    import subprocess

    db = tmp_path / "满.db"
    done = subprocess.run([sys.executable, "-c", FOLD_ON_A_FULL_DISK, str(db)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr
    with Store(db) as store:
        assert store.db.execute("SELECT length(b) FROM scratch").fetchone()[0] > 65536
