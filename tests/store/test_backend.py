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
