"""The PostgreSQL backend on a real server (tests/pg.py starts it from the wheel)."""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg import PostgresServer

from chatmem import fts
from chatmem.errors import NotChatmemDatabase, StoreError
from chatmem.store import postgres_schema
from chatmem.store.postgres_backend import PostgresBackend, translate

NOW = "2026-12-02T10:00:00.000+00:00"


@pytest.fixture
def backend(pg_url: str) -> Iterator[PostgresBackend]:
    with PostgresBackend(pg_url) as b:
        yield b


def add_session(b: PostgresBackend, name: str = "work") -> int:
    with b.write():
        return int(b.execute(
            "INSERT INTO sessions (name, strategy, created_at, updated_at)"
            " VALUES (?, 'window', ?, ?) RETURNING id", [name, NOW, NOW]).fetchone()[0])


def add_message(b: PostgresBackend, session_id: int, position: int, content: str,
                turn: int | None = None) -> int:
    with b.write():
        message_id = int(b.execute(
            "INSERT INTO messages (session_id, position, turn, role, content, created_at)"
            " VALUES (?, ?, ?, 'user', ?, ?) RETURNING id",
            [session_id, position, position + 1 if turn is None else turn, content, NOW],
        ).fetchone()[0])
        b.index_words(message_id, fts.index_text(content))
    return message_id


def count(b: PostgresBackend, table: str) -> int:
    return int(b.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


# -- placeholders ------------------------------------------------------------------------


def test_translate_turns_placeholders_outside_literals_and_doubles_every_percent() -> None:
    assert translate("SELECT a FROM t WHERE b = ? AND c LIKE ?") == (
        "SELECT a FROM t WHERE b = %s AND c LIKE %s")
    assert translate("SELECT '?', 'it''s ?%', \"we?ird\" WHERE x = ?") == (
        "SELECT '?', 'it''s ?%%', \"we?ird\" WHERE x = %s")
    assert translate("SELECT 5 % 2 -- why? 100%\n, ?") == "SELECT 5 %% 2 -- why? 100%%\n, %s"
    assert translate("SELECT 1") == "SELECT 1"


def test_statements_with_percent_and_question_marks_in_literals_run(
        backend: PostgresBackend) -> None:
    row = backend.execute("SELECT ? || '%' || '?', 'a?b' LIKE 'a_b', 7 % 4, ?",
                          ["50", "杭州%?"]).fetchone()
    assert tuple(row) == ("50%?", True, 3, "杭州%?")


def test_values_come_back_with_sqlites_types(backend: PostgresBackend) -> None:
    session_id = add_session(backend)
    message_id = add_message(backend, session_id, 0, "我们五月去杭州旅行")
    with backend.write():
        backend.execute("UPDATE messages SET gap_s = ? WHERE id = ?", [float("inf"), message_id])
        backend.execute("INSERT INTO message_vectors VALUES (?, 'e5', 3, ?, ?)",
                        [message_id, b"\x00\x01\xff", b""])
    cursor = backend.execute("SELECT m.id, m.turn, m.content, m.gap_s, m.external_id, v.vector"
                             " FROM messages m JOIN message_vectors v ON v.message_id = m.id")
    assert [d[0] for d in cursor.description] == ["id", "turn", "content", "gap_s",
                                                  "external_id", "vector"]
    row = cursor.fetchone()
    assert tuple(row) == (message_id, 1, "我们五月去杭州旅行", float("inf"), None, b"\x00\x01\xff")
    assert type(row[0]) is int and type(row[5]) is bytes


def test_executemany_inserts_every_row(backend: PostgresBackend) -> None:
    session_id = add_session(backend)
    with backend.write():
        backend.executemany("INSERT INTO strategy_state VALUES (?, 'summary', ?, ?)",
                            [(session_id, f"k{i}", f"{i}%") for i in range(5)])
    assert backend.execute("SELECT key, value FROM strategy_state ORDER BY key").fetchall() == [
        (f"k{i}", f"{i}%") for i in range(5)]


# -- schema ------------------------------------------------------------------------------

_TYPES = {"INTEGER": "bigint", "TEXT": "text", "REAL": "double precision", "BLOB": "bytea"}


def test_the_schema_has_every_sqlite_table_and_column_with_matching_types(
        backend: PostgresBackend, tmp_path: Path) -> None:
    from chatmem.store import Store

    with Store(tmp_path / "h.db"):
        pass
    sqlite = sqlite3.connect(tmp_path / "h.db")
    tables = [r[0] for r in sqlite.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%'"
        " AND name NOT LIKE '\\_sqlite%' ESCAPE '\\'")]
    assert "messages" in tables and "fact_history" in tables
    for table in tables:
        expected = {(name, _TYPES[kind]) for _, name, kind, *_ in
                    sqlite.execute(f"PRAGMA table_info({table})")}
        found = {tuple(r) for r in backend.execute(
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ?", [table])}
        assert found - {("owner", "text")} == expected, table
        assert backend.has_column(table, sorted(expected)[0][0])
    sqlite_indexes = {r[0] for r in sqlite.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
    pg_indexes = {r[0] for r in backend.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")}
    assert sqlite_indexes - {"idx__sqlite_migrations_migration_set_name"} <= pg_indexes
    assert not backend.has_column("messages", "no_such_column")


def test_two_first_users_of_a_new_database_both_open_it_and_it_is_migrated_once(
        pg_empty_url: str) -> None:
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def open_it() -> None:
        try:
            start.wait()
            PostgresBackend(pg_empty_url).close()
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=open_it) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    with PostgresBackend(pg_empty_url) as b:
        applied = [r[0] for r in b.execute("SELECT name FROM chatmem_migrations")]
        assert applied == [m.__name__ for m in postgres_schema.MIGRATIONS]
        assert b.execute("SELECT value FROM chatmem_meta WHERE key = 'application'"
                         ).fetchone()[0] == "chatmem"


def test_a_database_with_other_tables_is_refused_and_left_alone(
        pg_empty_url: str, pg_server: PostgresServer) -> None:
    name = pg_empty_url.split("/")[3].split("?")[0]
    with pg_server.admin(name) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(NotChatmemDatabase) as e:
        PostgresBackend(pg_empty_url)
    assert e.value.message == f"{pg_empty_url} is not a chatmem database (it has other tables)"
    with pg_server.admin(name) as conn:
        assert [r[0] for r in conn.execute("SELECT tablename FROM pg_tables"
                                           " WHERE schemaname = 'public'")] == ["invoices"]


def test_a_database_from_a_newer_chatmem_is_refused(pg_url: str, pg_server: PostgresServer,
                                                    backend: PostgresBackend) -> None:
    with backend.write():
        backend.execute("INSERT INTO chatmem_migrations VALUES ('p999_future', ?)", [NOW])
    with pytest.raises(NotChatmemDatabase) as e:
        PostgresBackend(pg_url)
    assert "newer chatmem (schema p999_future)" in e.value.message


# -- writing -----------------------------------------------------------------------------


def test_an_error_inside_a_write_stores_nothing_of_it(backend: PostgresBackend) -> None:
    session_id = add_session(backend)
    with pytest.raises(RuntimeError), backend.write():
        add_message(backend, session_id, 0, "half a turn")  # nested: a savepoint
        assert backend.in_transaction
        raise RuntimeError("the model failed")
    assert not backend.in_transaction
    assert (count(backend, "messages"), count(backend, "message_words")) == (0, 0)


def test_a_failed_nested_write_rolls_back_only_itself(backend: PostgresBackend) -> None:
    session_id = add_session(backend)
    with backend.write():
        add_message(backend, session_id, 0, "kept")
        with pytest.raises(RuntimeError), backend.write():
            add_message(backend, session_id, 1, "dropped")
            raise RuntimeError
    assert [r[0] for r in backend.execute("SELECT content FROM messages")] == ["kept"]


def test_writers_take_turns(pg_url: str, backend: PostgresBackend) -> None:
    """A second writer waits for the first to commit, as on SQLite's BEGIN IMMEDIATE."""
    entered = threading.Event()
    session_id = add_session(backend)

    def second_writer() -> None:
        with PostgresBackend(pg_url) as other, other.write():
            entered.set()
            other.execute("UPDATE sessions SET model = 'second' WHERE id = ?", [session_id])

    with backend.write():
        backend.execute("UPDATE sessions SET model = 'first' WHERE id = ?", [session_id])
        thread = threading.Thread(target=second_writer)
        thread.start()
        assert not entered.wait(0.5)  # held off while the first write is open
    thread.join()
    assert entered.is_set()
    assert backend.execute("SELECT model FROM sessions").fetchone()[0] == "second"


def test_a_writer_held_off_too_long_is_told_the_database_is_busy(
        pg_url: str, backend: PostgresBackend) -> None:
    with PostgresBackend(pg_url, busy_timeout_ms=200) as other, backend.write():
        with pytest.raises(StoreError) as e, other.write():
            pass
        assert e.value.message == f"{pg_url} is busy: another process held it for over 0.2 s;" \
                                  " try again"
        with pytest.raises(StoreError):
            other.check_writable()


def test_check_writable_writes_nothing_and_refuses_a_read_only_database(
        pg_url: str, pg_server: PostgresServer, backend: PostgresBackend) -> None:
    backend.check_writable()
    assert not backend.in_transaction
    name = pg_url.split("/")[3].split("?")[0]
    with pg_server.admin() as conn:
        conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    with PostgresBackend(pg_url) as read_only:
        with pytest.raises(StoreError) as e:
            read_only.check_writable()
        assert e.value.message == f"{pg_url} is read-only: nothing can be stored"
        with pytest.raises(StoreError), read_only.write():
            read_only.execute("INSERT INTO chatmem_meta VALUES ('x', 'y')")


def test_a_connection_dropped_mid_write_stores_nothing_and_says_so(
        pg_url: str, pg_server: PostgresServer, backend: PostgresBackend) -> None:
    session_id = add_session(backend)
    pid = backend.execute("SELECT pg_backend_pid()").fetchone()[0]
    with pytest.raises(StoreError) as e, backend.write():
        add_message(backend, session_id, 0, "half a turn")
        with pg_server.admin() as conn:
            conn.execute("SELECT pg_terminate_backend(?)".replace("?", "%s"), (pid,))
        add_message(backend, session_id, 1, "the reply")
    assert e.value.message.startswith(f"{pg_url}: the connection was lost; memory untouched")
    with PostgresBackend(pg_url) as fresh:
        assert count(fresh, "messages") == 0


# -- words -------------------------------------------------------------------------------


def test_word_scores_stem_english_and_match_chinese_bigrams(backend: PostgresBackend) -> None:
    one, two = add_session(backend, "one"), add_session(backend, "two")
    running = add_message(backend, one, 0, "I was running along the river")
    hangzhou = add_message(backend, one, 1, "我们五月去杭州旅行")
    add_message(backend, one, 2, "nothing relevant here")
    elsewhere = add_message(backend, two, 0, "She runs every morning in 杭州")

    def found(query: str, session_id: int | None = None, before_turn: int | None = None
              ) -> list[int]:
        scores = backend.word_scores(fts.query_terms(query), session_id, before_turn, 10)
        assert all(isinstance(s, float) and s > 0 for _, _, s in scores)
        return [message_id for message_id, _, _ in scores]

    assert found("runs", one) == [running]
    assert sorted(found("run")) == sorted([running, elsewhere])
    assert found("杭州", one) == [hangzhou]
    assert found("去杭州", None) == [hangzhou, elsewhere]  # two bigrams beat one
    assert found("杭州", one, before_turn=2) == []
    assert found("tennis") == []
    assert backend.word_scores([], None, None, 10) == []
    positions = {m: p for m, p, _ in backend.word_scores(["杭州"], None, None, 10)}
    assert positions == {hangzhou: 1, elsewhere: 0}


def test_counting_matches_stops_after_most_plus_one(backend: PostgresBackend) -> None:
    session_id = add_session(backend)
    for i in range(6):
        add_message(backend, session_id, i, f"rain number {i}")
    assert backend.count_word_matches("rain", 2) == 3
    assert backend.count_word_matches("rain", 10) == 6
    assert backend.count_word_matches("snow", 10) == 0


def test_reindexing_replaces_and_unindexing_removes_entries(backend: PostgresBackend) -> None:
    session_id = add_session(backend)
    message_id = add_message(backend, session_id, 0, "my card is 4111 secret")
    with backend.write():
        backend.index_words(message_id, fts.index_text("my card is [redacted]"))
    assert backend.count_word_matches("secret", 5) == 0
    assert backend.count_word_matches("redacted", 5) == 1
    with backend.write():
        backend.unindex_words([message_id])
    backend.forget_erased_words()
    backend.fold_log()
    assert count(backend, "message_words") == 0


def test_the_word_statistics_follow_every_change_of_the_index(backend: PostgresBackend) -> None:
    def statistics() -> tuple[int, int]:
        row = backend.execute("SELECT entries, tokens FROM word_statistics").fetchone()
        actual = backend.execute("SELECT count(*), coalesce(sum(tokens), 0) FROM message_words"
                                 ).fetchone()
        assert tuple(row) == tuple(actual)
        return int(row[0]), int(row[1])

    one, two = add_session(backend, "one"), add_session(backend, "two")
    first = add_message(backend, one, 0, "the cat_sat on 我们五月")  # cat, sat, on, the + 3 bigrams
    add_message(backend, one, 1, "dinner at eight")
    add_message(backend, two, 0, "杭州")
    assert statistics() == (3, 7 + 3 + 1)
    with backend.write():
        backend.index_words(first, fts.index_text("[redacted]"))
    assert statistics() == (3, 1 + 3 + 1)
    with backend.write():
        backend.execute("DELETE FROM sessions WHERE id = ?", [one])  # cascades to the words
    assert statistics() == (1, 1)


# -- row ownership -----------------------------------------------------------------------

USER_TABLES = postgres_schema.USER_TABLES


def fill(b: PostgresBackend, name: str) -> int:
    """A session with a row in every table of user data; returns the session's id."""
    session_id = add_session(b, name)
    message_id = add_message(b, session_id, 0, f"{name}: 我们五月去杭州旅行")
    with b.write():
        b.execute("INSERT INTO token_counts VALUES (?, 'o200k', 9)", [message_id])
        b.execute("INSERT INTO message_vectors VALUES (?, 'e5', 1, ?, ?)",
                  [message_id, b"\x01", b"\x02"])
        b.execute("INSERT INTO turns (session_id, number, status, input, context, strategy,"
                  " created_at) VALUES (?, 1, 'ok', 'hi', '{}', 'window', ?)", [session_id, NOW])
        b.execute("INSERT INTO summaries (session_id, strategy, version, text, created_at)"
                  " VALUES (?, 'summary', 1, 'sum', ?)", [session_id, NOW])
        fact_id = b.execute(
            "INSERT INTO facts (scope, \"user\", session_id, key, value, created_at, updated_at)"
            " VALUES ('session', NULL, ?, 'city', '杭州', ?, ?) RETURNING id",
            [session_id, NOW, NOW]).fetchone()[0]
        b.execute("INSERT INTO facts (scope, \"user\", key, value, created_at, updated_at)"
                  " VALUES ('user', ?, 'name', ?, ?, ?)", [name, name, NOW, NOW])
        b.execute("INSERT INTO fact_history (fact_id, key, value, stated_at, replaced_at)"
                  " VALUES (?, 'city', 'Paris', ?, ?)", [fact_id, NOW, NOW])
        b.execute("INSERT INTO strategy_state VALUES (?, 'summary', 'k', 'v')", [session_id])
        b.execute("INSERT INTO session_prompts VALUES (?, 1, 'be brief')", [session_id])
        b.execute("INSERT INTO probes (session_id, after_position, question) VALUES (?, 0, ?)",
                  [session_id, "where?"])
    return session_id


def visible(b: PostgresBackend) -> dict[str, int]:
    return {table: count(b, table) for table in USER_TABLES}


@pytest.fixture
def ann_and_bob(pg_url: str, pg_server: PostgresServer
                ) -> Iterator[tuple[PostgresBackend, PostgresBackend]]:
    database = pg_url.split("/")[3].split("?")[0]
    with PostgresBackend(pg_server.url(database, "ann")) as ann, \
            PostgresBackend(pg_server.url(database, "bob")) as bob:
        yield ann, bob


def test_a_role_sees_and_touches_none_of_anothers_rows(
        ann_and_bob: tuple[PostgresBackend, PostgresBackend]) -> None:
    ann, bob = ann_and_bob
    fill(ann, "work")
    own = visible(ann)
    assert all(own[t] >= 1 for t in USER_TABLES if t != "session_shares")
    assert visible(bob) == dict.fromkeys(USER_TABLES, 0)
    assert bob.word_scores(["杭州"], None, None, 10) == []
    assert bob.count_word_matches("杭州", 10) == 0
    with bob.write():
        for table in USER_TABLES:
            assert bob.execute(f"UPDATE {table} SET owner = owner").rowcount == 0
            assert bob.execute(f"DELETE FROM {table}").rowcount == 0
    assert visible(ann) == own
    # Names are unique per owner: both may call a session "work".
    fill(bob, "work")
    assert [r[0] for r in bob.execute("SELECT name FROM sessions")] == ["work"]
    assert visible(ann) == own


def test_a_shared_session_is_the_one_exception(
        ann_and_bob: tuple[PostgresBackend, PostgresBackend]) -> None:
    ann, bob = ann_and_bob
    shared, private = fill(ann, "shared"), fill(ann, "private")
    with ann.write():
        ann.execute("INSERT INTO session_shares (session_id, grantee, mode) VALUES (?, 'bob',"
                    " 'read')", [shared])
    assert [r[0] for r in bob.execute("SELECT id FROM sessions")] == [shared]
    assert {r[0] for r in bob.execute("SELECT session_id FROM messages")} == {shared}
    assert [r[0] for r in bob.execute("SELECT key FROM facts")] == ["city"]  # not ann's user fact
    assert [m for m, _, _ in bob.word_scores(["杭州"], None, None, 10)] == [
        r[0] for r in ann.execute("SELECT id FROM messages WHERE session_id = ?", [shared])]
    # Read-only: bob can neither add to it nor change it.
    with pytest.raises(StoreError) as e:
        add_message(bob, shared, 5, "bob was here")
    assert "may not change that" in e.value.message
    with bob.write():
        assert bob.execute("UPDATE messages SET content = 'x'").rowcount == 0
    # Bob cannot share ann's sessions with himself.
    with pytest.raises(StoreError), bob.write():
        bob.execute("INSERT INTO session_shares (session_id, grantee, mode) VALUES (?, 'bob',"
                    " 'write')", [private])
    # Shared for writing, bob adds a turn; ann sees it, bob still cannot delete the session.
    with ann.write():
        ann.execute("UPDATE session_shares SET mode = 'write' WHERE session_id = ?", [shared])
    add_message(bob, shared, 5, "bob was here")
    assert ann.count_word_matches("bob", 10) == 1
    with bob.write():
        assert bob.execute("DELETE FROM sessions").rowcount == 0
    # Unshared, the session is ann's alone again.
    with ann.write():
        ann.execute("DELETE FROM session_shares")
    assert [r[0] for r in bob.execute("SELECT session_id FROM messages")] == [shared]  # his own
    assert count(bob, "sessions") == 0


# -- errors name the database, never its password ------------------------------------------


def _open_error(url: str) -> str:
    with pytest.raises(StoreError) as e:
        PostgresBackend(url)
    message = e.value.message
    assert "s3cret" not in message and "\n" not in message
    return message


def test_connection_errors_name_the_masked_url(pg_server: PostgresServer, tmp_path: Path,
                                               pg_url: str) -> None:
    socket = pg_server.socket_dir
    refused = _open_error(f"postgresql://ann:s3cret@/chat?host={tmp_path}")
    assert refused.startswith(f"postgresql://ann:***@/chat?host={tmp_path}: cannot connect: ")
    no_role = _open_error(f"postgresql://nobody:s3cret@/postgres?host={socket}")
    assert no_role.startswith(f"postgresql://nobody:***@/postgres?host={socket}: cannot connect")
    assert 'role "nobody" does not exist' in no_role
    no_database = _open_error(f"postgresql://ann@/missing?host={socket}&password=s3cret")
    assert no_database.startswith(f"postgresql://ann@/missing?host={socket}&password=***: ")
    bad = _open_error("postgresql://ann:s3cret@localhost:1/chat?connect_timeout=2")
    assert bad.startswith("postgresql://ann:***@localhost:1/chat?connect_timeout=2: ")


def test_without_psycopg_the_message_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch, pg_url: str) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreError) as e:
        PostgresBackend(pg_url)
    assert e.value.message == (f"{pg_url}: a PostgreSQL history needs psycopg: pip install -e"
                               " '.[postgres]' in the chatmem checkout")


# -- the same recall as SQLite ---------------------------------------------------------------

_WORDS = ("travel", "travelling", "travelled", "trip", "trips", "flight", "flights", "booking",
          "booked", "hotel", "hotels", "running", "runs", "ran", "cat", "cats", "cooking",
          "cooked", "dinner", "dinners", "meeting", "meetings", "budget", "report", "reports",
          "deadline", "deadlines", "python", "database", "databases", "garden", "gardening",
          "Hangzhou", "Paris", "weekend", "weekends", "train", "trains")
_CHINESE = ("我们五月去杭州旅行", "预订酒店", "明天开会讨论预算", "周末去公园跑步",
            "晚饭做了红烧肉", "数据库迁移", "杭州的酒店很贵", "报告的截止日期")
_STOP = ("the", "and", "we", "to", "a", "is")


def _conversation(seed: int, count: int) -> list[str]:
    import random

    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        words = [rng.choice([*_WORDS, *_STOP]) for _ in range(rng.randint(2, 14))]
        if rng.random() < 0.4:
            words.insert(rng.randint(0, len(words)), rng.choice(_CHINESE))
        texts.append(" ".join(words))
    return texts


def test_word_scores_rank_as_sqlite_fts5_bm25_does(backend: PostgresBackend) -> None:
    """SQLite's index (schema m003: FTS5, porter) and this backend, given the same messages,
    score every query's matches alike: the same messages, in the same order."""
    sqlite = sqlite3.connect(":memory:")
    sqlite.execute("CREATE VIRTUAL TABLE messages_fts USING fts5(terms,"
                   " tokenize='porter unicode61')")
    sessions = {add_session(backend, f"s{seed}"): _conversation(seed, 40) for seed in range(3)}
    where: dict[int, tuple[int, int]] = {}
    for session_id, texts in sessions.items():
        for position, text in enumerate(texts):
            message_id = add_message(backend, session_id, position, text, turn=position // 2 + 1)
            sqlite.execute("INSERT INTO messages_fts (rowid, terms) VALUES (?, ?)",
                           [message_id, fts.index_text(text)])
            where[message_id] = (session_id, position // 2 + 1)
    queries = ["travelling to Hangzhou", "booked hotels", "cooking dinner", "the deadlines",
               "杭州酒店", "预算会议", "running in the garden", "database report 数据库",
               "python", "trips and flights 旅行"]
    compared = 0
    for query in queries:
        terms = fts.query_terms(query)
        for session_id in (None, *sessions):
            expected = sorted(
                ((-score, rowid) for rowid, score in sqlite.execute(
                    "SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts"
                    " MATCH ?", [fts.match_terms(terms)])
                 if session_id in (None, where[rowid][0]) and where[rowid][1] < 15),
                key=lambda item: (-item[0], item[1]))[:10]
            found = backend.word_scores(terms, session_id, 15, 10)
            assert [m for m, _, _ in found] == [m for _, m in expected], (query, session_id)
            assert [s for _, _, s in found] == pytest.approx([s for s, _ in expected],
                                                             rel=1e-9), query
            compared += len(found)
    assert compared > 100
