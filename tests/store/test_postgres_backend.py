"""The PostgreSQL backend on a real server (tests/pg.py starts it from the wheel):
statements, schema, writes and errors."""

from __future__ import annotations

import sqlite3
import sys
import threading
from pathlib import Path

import psycopg
import pytest
from pg import NOW, PostgresServer, Team, add_message, add_session, count, migrated_before
from waiting import at_once, wait_until

from chatmem.errors import NotChatmemDatabase, StoreError, StoreFailure
from chatmem.store import postgres_schema
from chatmem.store.postgres_backend import PostgresBackend
from chatmem.store.postgres_placeholders import translate
from chatmem.store.postgres_upgrading import MARK, WRITE_LOCK

# -- placeholders ------------------------------------------------------------------------


def test_translate_turns_placeholders_outside_literals_and_doubles_every_percent() -> None:
    assert translate("SELECT a FROM t WHERE b = ? AND c LIKE ?") == (
        "SELECT a FROM t WHERE b = %s AND c LIKE %s")
    assert translate("SELECT '?', 'it''s ?%', \"we?ird\" WHERE x = ?") == (
        "SELECT '?', 'it''s ?%%', \"we?ird\" WHERE x = %s")
    assert translate("SELECT 5 % 2 -- why? 100%\n, ?") == "SELECT 5 %% 2 -- why? 100%%\n, %s"
    assert translate("SELECT 1") == "SELECT 1"


def test_statements_with_percent_and_question_marks_in_literals_run(
        pg_backend: PostgresBackend) -> None:
    row = pg_backend.execute("SELECT ? || '%' || '?', 'a?b' LIKE 'a_b', 7 % 4, ?",
                          ["50", "杭州%?"]).fetchone()
    assert tuple(row) == ("50%?", True, 3, "杭州%?")


def test_values_come_back_with_sqlites_types(pg_backend: PostgresBackend) -> None:
    session_id = add_session(pg_backend)
    message_id = add_message(pg_backend, session_id, 0, "我们五月去杭州旅行")
    with pg_backend.write():
        pg_backend.execute("UPDATE messages SET gap_s = ? WHERE id = ?", [float("inf"), message_id])
        pg_backend.execute("INSERT INTO message_vectors VALUES (?, 'e5', 3, ?, ?)",
                        [message_id, b"\x00\x01\xff", b""])
    cursor = pg_backend.execute("SELECT m.id, m.turn, m.content, m.gap_s, m.external_id, v.vector"
                             " FROM messages m JOIN message_vectors v ON v.message_id = m.id")
    assert [d[0] for d in cursor.description] == ["id", "turn", "content", "gap_s",
                                                  "external_id", "vector"]
    row = cursor.fetchone()
    assert tuple(row) == (message_id, 1, "我们五月去杭州旅行", float("inf"), None, b"\x00\x01\xff")
    assert type(row[0]) is int and type(row[5]) is bytes


def test_executemany_inserts_every_row(pg_backend: PostgresBackend) -> None:
    session_id = add_session(pg_backend)
    with pg_backend.write():
        pg_backend.executemany("INSERT INTO strategy_state VALUES (?, 'summary', ?, ?)",
                            [(session_id, f"k{i}", f"{i}%") for i in range(5)])
    assert pg_backend.execute("SELECT key, value FROM strategy_state ORDER BY key").fetchall() == [
        (f"k{i}", f"{i}%") for i in range(5)]


# -- schema ------------------------------------------------------------------------------

_TYPES = {"INTEGER": "bigint", "TEXT": "text", "REAL": "double precision", "BLOB": "bytea"}


def test_the_schema_has_every_sqlite_table_and_column_with_matching_types(
        pg_backend: PostgresBackend, tmp_path: Path) -> None:
    from chatmem.store import Store

    with Store(tmp_path / "h.db"):
        pass
    sqlite = sqlite3.connect(tmp_path / "h.db")
    tables = [r[0] for r in sqlite.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%'"
        " AND name NOT LIKE '\\_sqlite%' ESCAPE '\\' AND name != 'sqlite_sequence'")]
    assert "messages" in tables and "fact_history" in tables
    for table in tables:
        expected = {(name, _TYPES[kind]) for _, name, kind, *_ in
                    sqlite.execute(f"PRAGMA table_info({table})")}
        found = {tuple(r) for r in pg_backend.execute(
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ?", [table])}
        # PostgreSQL's own: the owner, pgvector's copies of the vectors (p002), and who
        # inserted a message or a turn (p023: a file has one user).
        own = {("owner", "text"), ("embedding", "USER-DEFINED"),
               ("context_embedding", "USER-DEFINED"), ("writer", "text"),
               ("copied_from", "bigint")}
        assert found - own == expected, table
        assert pg_backend.has_column(table, sorted(expected)[0][0])
    sqlite_indexes = {r[0] for r in sqlite.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
    pg_indexes = {r[0] for r in pg_backend.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")}
    assert sqlite_indexes - {"idx__sqlite_migrations_migration_set_name"} <= pg_indexes
    assert not pg_backend.has_column("messages", "no_such_column")


def test_two_first_users_of_a_new_database_both_open_it_and_it_is_migrated_once(
        pg_empty_url: str) -> None:
    failures = at_once(lambda: PostgresBackend(pg_empty_url).close())
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
    assert e.value.newer_schema is None  # not ours at all, not merely newer
    with pg_server.admin(name) as conn:
        assert [r[0] for r in conn.execute("SELECT tablename FROM pg_tables"
                                           " WHERE schemaname = 'public'")] == ["invoices"]


def test_a_database_from_a_newer_chatmem_is_refused(pg_url: str, pg_server: PostgresServer,
                                                    pg_backend: PostgresBackend) -> None:
    with pg_backend.write():
        pg_backend.execute("INSERT INTO chatmem_migrations VALUES ('p999_future', ?)", [NOW])
    with pytest.raises(NotChatmemDatabase) as e:
        PostgresBackend(pg_url)
    assert e.value.newer_schema == "p999_future"


# -- writing -----------------------------------------------------------------------------


def test_an_error_inside_a_write_stores_nothing_of_it(pg_backend: PostgresBackend) -> None:
    session_id = add_session(pg_backend)
    with pytest.raises(RuntimeError), pg_backend.write():
        add_message(pg_backend, session_id, 0, "half a turn")  # nested: a savepoint
        assert pg_backend.in_transaction
        raise RuntimeError("the model failed")
    assert not pg_backend.in_transaction
    assert (count(pg_backend, "messages"), count(pg_backend, "message_words")) == (0, 0)


def test_a_failed_nested_write_rolls_back_only_itself(pg_backend: PostgresBackend) -> None:
    session_id = add_session(pg_backend)
    with pg_backend.write():
        add_message(pg_backend, session_id, 0, "kept")
        with pytest.raises(RuntimeError), pg_backend.write():
            add_message(pg_backend, session_id, 1, "dropped")
            raise RuntimeError
    assert [r[0] for r in pg_backend.execute("SELECT content FROM messages")] == ["kept"]


def test_writers_take_turns(pg_url: str, pg_backend: PostgresBackend) -> None:
    """A second writer waits for the first to commit, as on SQLite's BEGIN IMMEDIATE."""
    entered = threading.Event()
    session_id = add_session(pg_backend)

    def second_writer() -> None:
        with PostgresBackend(pg_url) as other, other.write():
            entered.set()
            other.execute("UPDATE sessions SET model = 'second' WHERE id = ?", [session_id])

    def a_writer_waits_for_the_lock() -> bool:
        return pg_backend.execute(
            "SELECT count(*) FROM pg_locks JOIN pg_database d ON d.oid = pg_locks.database"
            " WHERE locktype = 'advisory' AND NOT granted AND d.datname = current_database()"
        ).fetchone()[0] > 0

    with pg_backend.write():
        pg_backend.execute("UPDATE sessions SET model = 'first' WHERE id = ?", [session_id])
        thread = threading.Thread(target=second_writer)
        thread.start()
        # However long the second writer takes to connect: it either gets in (no turns
        # taken) or is seen queued for the write lock.
        wait_until(lambda: entered.is_set() or a_writer_waits_for_the_lock()
                   or not thread.is_alive(), "the second writer queues for the lock")
        assert not entered.is_set() and thread.is_alive()
    thread.join()
    assert entered.is_set()
    assert pg_backend.execute("SELECT model FROM sessions").fetchone()[0] == "second"


def test_a_writer_held_off_too_long_is_told_the_database_is_busy(
        pg_url: str, pg_backend: PostgresBackend) -> None:
    holder = pg_backend.execute("SELECT pg_backend_pid()").fetchone()[0]
    with PostgresBackend(pg_url, busy_timeout_ms=200) as other, pg_backend.write():
        with pytest.raises(StoreError) as e, other.write():
            pass
        assert e.value.message == (f"{pg_url} is busy: another process (pid {holder}, role"
                                   f" postgres, {MARK}) held it for over 0.2 s; try again")
        with pytest.raises(StoreError) as checked:
            other.check_writable()
        assert (e.value.kind, checked.value.kind) == (StoreFailure.BUSY,) * 2


def test_a_write_held_off_by_another_role_names_it(team: Team) -> None:
    """Any role may take the advisory lock writers queue on (a write share's grantee by
    plain SQL, holding it for good): a write that gave up (a rename, a purge, a share: all
    but a turn's, which waits longer and says whose) named nobody, "another process held
    it for over 5 s", as if a colleague's import were under way."""
    with psycopg.connect(team.url("bob") + "&application_name=psql", autocommit=True) as bob:
        bob.execute("SELECT pg_advisory_lock(%s)", [WRITE_LOCK])
        pid = bob.execute("SELECT pg_backend_pid()").fetchone()[0]
        with PostgresBackend(team.url("ann"), busy_timeout_ms=200) as ann:
            with pytest.raises(StoreError) as e, ann.write():
                ann.execute("INSERT INTO sessions (name, strategy, created_at, updated_at)"
                            " VALUES ('会议', 'buffer', ?, ?)", [NOW, NOW])
            assert e.value.kind is StoreFailure.BUSY
            assert f"another process (pid {pid}, role bob, psql) held it for over 0.2 s" \
                in e.value.message
            with pytest.raises(StoreError) as checked:
                ann.check_writable()
            assert checked.value.message == e.value.message
    with PostgresBackend(team.url("ann")) as ann, ann.write():  # let go: writes go on
        ann.execute("INSERT INTO sessions (name, strategy, created_at, updated_at)"
                    " VALUES ('会议', 'buffer', ?, ?)", [NOW, NOW])
    assert team.rows("SELECT name, owner FROM sessions") == [("会议", "ann")]


def test_check_writable_writes_nothing_and_refuses_a_read_only_database(
        pg_url: str, pg_server: PostgresServer, pg_backend: PostgresBackend) -> None:
    pg_backend.check_writable()
    assert not pg_backend.in_transaction
    name = pg_url.split("/")[3].split("?")[0]
    with pg_server.admin() as conn:
        conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    with PostgresBackend(pg_url) as read_only:
        with pytest.raises(StoreError) as e:
            read_only.check_writable()
        with pytest.raises(StoreError) as written, read_only.write():
            read_only.execute("INSERT INTO chatmem_meta VALUES ('x', 'y')")
        assert (e.value.kind, written.value.kind) == (StoreFailure.READ_ONLY,) * 2


def test_a_connection_dropped_mid_write_stores_nothing_and_says_so(
        pg_url: str, pg_server: PostgresServer, pg_backend: PostgresBackend) -> None:
    session_id = add_session(pg_backend)
    pid = pg_backend.execute("SELECT pg_backend_pid()").fetchone()[0]
    with pytest.raises(StoreError) as e, pg_backend.write():
        add_message(pg_backend, session_id, 0, "half a turn")
        with pg_server.admin() as conn:
            conn.execute("SELECT pg_terminate_backend(?)".replace("?", "%s"), (pid,))
        add_message(pg_backend, session_id, 1, "the reply")
    assert e.value.kind is StoreFailure.CONNECTION_LOST
    assert e.value.message.startswith(f"{pg_url}: the connection was lost; memory untouched")
    with PostgresBackend(pg_url) as fresh:
        assert count(fresh, "messages") == 0


def test_after_a_lost_connection_the_next_statement_connects_anew(
        pg_url: str, pg_server: PostgresServer, pg_backend: PostgresBackend) -> None:
    """A server restart drops every connection: the statement that met it fails and says
    "try again", and trying again works, in this process (a chat, a server), not only in a
    new one. The failed statement is never run twice."""
    session_id = add_session(pg_backend)
    for attempt in range(2):
        pid = pg_backend.execute("SELECT pg_backend_pid()").fetchone()[0]
        with pg_server.admin() as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StoreError) as lost:
            add_message(pg_backend, session_id, attempt, "丢失的")
        assert lost.value.kind is StoreFailure.CONNECTION_LOST
        pg_backend.check_writable()
        add_message(pg_backend, session_id, attempt, f"第{attempt}条")
        assert pg_backend.execute("SELECT pg_backend_pid()").fetchone()[0] != pid
    assert [r[0] for r in pg_backend.execute(
        "SELECT content FROM messages ORDER BY position").fetchall()] == ["第0条", "第1条"]
    if pg_backend.ranks_vectors:  # the search settings of the connection are set again
        assert pg_backend.execute("SHOW hnsw.ef_search").fetchone()[0] == "400"


def test_a_read_or_the_pre_send_check_after_a_restart_connects_anew_and_goes_on(
        pg_server: PostgresServer, pg_backend: PostgresBackend) -> None:
    """Nothing was in flight when the server dropped the idle connection: the turn's check
    before it is sent, or a read, opens a new one once and goes on; a write still fails
    and says so (it is never run twice)."""
    session_id = add_session(pg_backend)

    def drop() -> int:
        pid = int(pg_backend.execute("SELECT pg_backend_pid()").fetchone()[0])
        with pg_server.admin() as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        return pid

    pid = drop()
    pg_backend.check_writable()
    assert pg_backend.execute("SELECT pg_backend_pid()").fetchone()[0] != pid
    drop()
    assert pg_backend.execute("SELECT name FROM sessions").fetchall() == [("work",)]
    drop()
    with pytest.raises(StoreError) as lost:
        add_message(pg_backend, session_id, 0, "丢失的")
    assert lost.value.kind is StoreFailure.CONNECTION_LOST
    assert count(pg_backend, "messages") == 0


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


def test_a_refused_connection_says_what_to_do_next(pg_server: PostgresServer,
                                                  tmp_path: Path) -> None:
    """A newcomer following the README meets these first: each line names the next step
    (libpq's own second line, "Is the server running...", was cut with the rest)."""
    socket = pg_server.socket_dir
    no_role = _open_error(f"postgresql://carol:s3cret@/postgres?host={socket}")
    assert no_role.endswith("chatmem admin add-user carol --db ADMIN-URL")
    no_database = _open_error(f"postgresql://postgres@/旅行?host={socket}")
    assert "CREATE DATABASE" in no_database.split('does not exist"', 1)[-1]
    refused = _open_error(f"postgresql://ann:s3cret@/chat?host={tmp_path}")
    assert refused.endswith("; is the server running there? check the URL's host and port")


def test_a_server_without_tls_says_how_to_go_on() -> None:
    """A server on another machine gets sslmode=require unless the URL says otherwise; one
    without TLS answers libpq's SSL request with "N" (what PostgreSQL itself sends)."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(8)  # the SSLRequest
            conn.sendall(b"N")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        message = _open_error(f"postgresql://ann:s3cret@127.0.0.1:{port}/chat?sslmode=require")
    finally:
        thread.join(5)
        listener.close()
    assert "SSL was required" in message
    assert message.endswith("add sslmode=disable to the URL only on a network you trust")


def test_without_psycopg_the_message_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch, pg_url: str) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreError) as e:
        PostgresBackend(pg_url)
    assert e.value.message == (f"{pg_url}: a PostgreSQL history needs psycopg: pip install -e"
                               " '.[postgres]' in the chatmem checkout")


def test_an_older_database_gets_the_earlier_facts_index_on_upgrade(
        pg_server: PostgresServer) -> None:
    """Deleting a session sets the earlier fact values it stated to no session: without an
    index on source_session_id, a scan of every earlier value per session (SQLite's m021)."""
    def indexes(url: str) -> set[str]:
        with PostgresBackend(url) as db:
            return {r[0] for r in db.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'fact_history'")}

    with migrated_before(pg_server, "p022_fact_history_found_by_its_session") as old:
        with psycopg.connect(old.url(old.keeper), autocommit=True) as conn:
            assert "fact_history_source_session" not in {r[0] for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'fact_history'")}
        assert "fact_history_source_session" in indexes(old.url(old.keeper))
