"""Word counts a SQLite connection keeps (chatmem.store.word_counts): always what a fresh
count gives, and cheaper the second time."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from meter import metered

from chatmem import fts
from chatmem.errors import ChatmemError
from chatmem.store import Store
from chatmem.store.session_runs import MOST_RUNS

WORDS = ("walnut", "oolong", "José", "阿丽丝", "tea")
TERMS = fts.query_terms(" ".join(WORDS))
CAPS = (1, 3, 10**6)

add = st.tuples(st.just("add"), st.sampled_from(("mine", "other")),
                st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
                st.integers(1, 4), st.booleans())
purge = st.tuples(st.just("purge"), st.sampled_from(WORDS), st.booleans())
drop = st.tuples(st.just("drop"), st.booleans())
undone = st.tuples(st.just("undone"), st.sampled_from(WORDS))
count = st.tuples(st.just("count"))
operations = st.lists(st.one_of(add, add, add, purge, drop, undone, count, count),
                      max_size=25)


def counts_of(store: Store) -> tuple[object, ...]:
    mine = store.sessions.find_session("mine")
    assert mine is not None
    found: list[object] = []
    for cap in CAPS:
        found.append(store.db.count_words_matches(TERMS, cap))
        found.append(store.db.session_word_counts(TERMS, mine.id, cap))
    return tuple(found)


@contextmanager
def history() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "h.db"
        with Store(path) as store:
            for name in ("mine", "other"):
                store.sessions.create_session(name, "retrieval", {})
        yield path


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_kept_counts_equal_fresh_ones_whatever_either_connection_does(
    steps: list[tuple[object, ...]],
) -> None:
    """Appends to either conversation (its runs split and join), purges, a deleted
    conversation and a rolled-back write, by this connection or another: the counts a
    long-open connection gives are a fresh connection's, in English and Chinese, under
    and past the cap."""
    with history() as path, ExitStack() as stack:
        stores = [stack.enter_context(Store(path)) for _ in range(2)]

        def check() -> None:
            with Store(path) as fresh:
                expected = counts_of(fresh)
            for store in stores:
                assert counts_of(store) == expected

        for step in steps:
            kind = step[0]
            if kind == "add":
                _, name, words, times, by_other = step
                store = stores[bool(by_other)]
                session = (store.sessions.find_session(str(name))
                           or store.sessions.create_session(str(name), "retrieval", {}))
                store.history.import_messages(
                    session.id, [{"role": "user", "content": " ".join(map(str, words))}]
                    * int(str(times)))
            elif kind == "purge":
                _, word, by_other = step
                store = stores[bool(by_other)]
                ids = [s.id for n in ("mine", "other")
                       if (s := store.sessions.find_session(n)) is not None]
                needle = str(word)
                store.redactions.rewrite_stored_text(
                    ids, None, [needle], lambda text, needle=needle: text.replace(needle, "x"))
            elif kind == "drop":
                store = stores[bool(step[1])]
                if store.sessions.find_session("other") is not None:
                    store.sessions.delete_session("other")
            elif kind == "undone":
                store = stores[0]
                mine = store.sessions.find_session("mine")
                assert mine is not None
                with pytest.raises(ChatmemError), store.db.write():
                    store.history.import_messages(
                        mine.id, [{"role": "user", "content": str(step[1])}] * 3)
                    # Counted inside the write, which is then rolled back.
                    counts_of(store)
                    raise ChatmemError("rolled back")
            else:
                check()
        check()


def test_each_change_that_lowers_a_count_is_seen(tmp_path: Path) -> None:
    """Each way entries leave or change, one at a time, by this connection and by
    another, after every count was kept: the property above, step by step."""
    path = tmp_path / "h.db"
    with Store(path) as store:
        for name in ("mine", "other"):
            store.sessions.create_session(name, "retrieval", {})
    with Store(path) as this, Store(path) as another:

        def check() -> None:
            with Store(path) as fresh:
                expected = counts_of(fresh)
            assert counts_of(this) == expected and counts_of(another) == expected

        def fill() -> None:
            for name in ("mine", "other", "mine"):
                session = (this.sessions.find_session(name)
                           or this.sessions.create_session(name, "retrieval", {}))
                this.history.import_messages(
                    session.id, [{"role": "user", "content": " ".join(WORDS)}] * 2)
            check()

        for store in (this, another):
            fill()
            ids = [this.sessions.session(n).id for n in ("mine", "other")]
            store.redactions.rewrite_stored_text(ids, None, ["José"],
                                                 lambda text: text.replace("José", "x"))
            check()
            fill()
            store.sessions.delete_session("other")
            check()
        fill()
        mine = this.sessions.session("mine")
        with pytest.raises(ChatmemError), this.db.write():
            this.history.import_messages(mine.id, [{"role": "user", "content": "tea"}] * 3)
            counts_of(this)
            raise ChatmemError("rolled back")
        check()


def test_a_conversation_s_counts_follow_its_runs_as_they_join(tmp_path: Path) -> None:
    """Past MOST_RUNS the oldest runs of a conversation join into one range, which then
    holds the other conversation's entries between them too (as a fresh count reads)."""
    path = tmp_path / "h.db"
    with Store(path) as store:
        mine = store.sessions.create_session("mine", "retrieval", {})
        other = store.sessions.create_session("other", "retrieval", {})
        for n in range(MOST_RUNS + 3):
            store.history.import_messages(mine.id, [{"role": "user", "content": "walnut"}])
            store.history.import_messages(other.id, [{"role": "user", "content": "walnut 阿丽丝"}])
            with Store(path) as fresh:
                assert counts_of(store) == counts_of(fresh), n


def test_a_word_counted_again_reads_only_what_was_added_since(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with Store(path) as store:
        mine = store.sessions.create_session("mine", "retrieval", {})
        store.history.import_messages(
            mine.id, [{"role": "user", "content": f"tea and 茶水 {n}"} for n in range(600)])
        terms = fts.query_terms("tea 茶水")
        with metered(store) as first:
            assert store.db.count_words_matches(terms, 10**6) == [600, 600]
        with metered(store) as second:
            assert store.db.count_words_matches(terms, 10**6) == [600, 600]
        store.history.import_messages(mine.id, [{"role": "user", "content": "tea 茶水"}] * 2)
        with metered(store) as third:
            assert store.db.count_words_matches(terms, 10**6) == [602, 602]
        assert first.steps > 10 * max(second.steps, third.steps, 1)
        # Past the cap nothing added changes a count: it is not read at all.
        store.db.count_words_matches(terms, 100)
        with metered(store) as capped:
            assert store.db.count_words_matches(terms, 100) == [101, 101]
        assert capped.steps <= 1 and capped.statements == 1


def test_while_another_connection_writes_each_count_is_one_statement(tmp_path: Path) -> None:
    """Another writer's commit between counts makes the known ones useless: once seen, the
    counts are read in full in one statement rather than read against the known ones and
    then again; when the other stops writing, they are reused again."""
    path = tmp_path / "h.db"
    with Store(path) as this, Store(path) as another:
        mine = this.sessions.create_session("mine", "retrieval", {})
        this.history.import_messages(
            mine.id, [{"role": "user", "content": f"tea 茶水 {n}"} for n in range(300)])
        terms = fts.query_terms("tea 茶水")
        this.db.count_words_matches(terms, 10**6)
        for round_, added in enumerate(range(1, 5)):
            another.history.import_messages(mine.id, [{"role": "user", "content": "tea"}])
            with metered(this) as meter:
                assert this.db.count_words_matches(terms, 10**6) == [300 + added, 300]
            # The first commit seen costs the counts read against the known ones once more.
            assert meter.statements == (2 if round_ == 0 else 1), round_
        with metered(this) as full:
            this.db.count_words_matches(terms, 10**6)
        with metered(this) as reused:
            assert this.db.count_words_matches(terms, 10**6) == [304, 300]
        assert reused.statements == 1 and full.steps > 10 * max(reused.steps, 1)
