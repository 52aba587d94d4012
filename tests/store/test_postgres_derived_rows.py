"""What a write share's grantee does to the owner's derived memory (p030): he adds a summary
only as its next version and changes or deletes none; of a strategy's state he changes only a
value and deletes only the rows a third role wrote (what his chatmem's update replaces). An
older database upgrades to it losing nothing; an older chatmem refuses it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from grantees import INSUFFICIENT_PRIVILEGE, shared_session, sql_as
from pg import NOW, OldHistory, PostgresServer, Team, migrated_before

from chatmem.errors import NotChatmemDatabase
from chatmem.store import Store
from chatmem.store import postgres_schema as schema

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

P030 = "p030_grantee_adds_to_derived_memory"
SUMMARIES = "SELECT strategy, version, text, writer, owner FROM summaries ORDER BY id"
STATE = "SELECT strategy, key, value, writer, owner FROM strategy_state ORDER BY strategy, key"


@pytest.fixture
def before_p030(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P030) as old:
        yield old


def add_summary(url: str, session_id: int, version: int | str, text: str) -> int | str:
    return sql_as(url, "INSERT INTO summaries (session_id, strategy, version, text, created_at)"
                       f" VALUES (%s, 'summary', {version}, %s, %s)", [session_id, text, NOW])


def set_state(url: str, session_id: int, key: str, value: str) -> int | str:
    return sql_as(url, "INSERT INTO strategy_state (session_id, strategy, key, value)"
                       " VALUES (%s, 'summary', %s, %s) ON CONFLICT (session_id, strategy, key)"
                       " DO UPDATE SET value = excluded.value", [session_id, key, value])


def test_an_older_database_upgrades_and_her_derived_memory_stays_hers(
        before_p030: OldHistory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p030
    ann, bob = old.url("ann"), old.url("bob")
    carol = f"carol_{old.database}"
    with old.server.admin() as conn:
        conn.execute(f"CREATE ROLE {carol} LOGIN")
    session_id = shared_session(ann, "summary")
    assert sql_as(ann, "INSERT INTO session_shares (session_id, grantee, mode)"
                       f" VALUES (%s, '{carol}', 'write')", [session_id]) == 1
    for version, text in enumerate(["- 我叫安娜。", "- 我叫安娜。\n- 我住在杭州。",
                                    "- My name is Ann.\n- I live in Hangzhou."], start=1):
        assert add_summary(ann, session_id, version, text) == 1
    for key, value in (("boundary_turn", "3"), ("pinned", "[]"), ("released", "0")):
        assert set_state(ann, session_id, key, value) == 1
    # Before p030 he deleted her latest summary, and a key of her state.
    assert sql_as(bob, "DELETE FROM summaries WHERE version = 3") == 1
    assert sql_as(bob, "DELETE FROM strategy_state WHERE key = 'released'") == 1
    with old.server.admin(old.database) as conn:
        stored = [conn.execute(sql).fetchall() for sql in (SUMMARIES, STATE)]

    PostgresBackend(old.url(old.keeper)).close()

    with old.server.admin(old.database) as conn:
        assert [conn.execute(sql).fetchall() for sql in (SUMMARIES, STATE)] == stored
    for sql in ("DELETE FROM summaries", "DELETE FROM strategy_state"):
        assert sql_as(bob, sql) == 0
    for sql in ("UPDATE summaries SET text = '用户叫马洛里。'",
                "UPDATE summaries SET version = 9223372036854775807 WHERE version = 1",
                "UPDATE strategy_state SET key = 'gone' WHERE key = 'pinned'",
                "UPDATE strategy_state SET strategy = 'window' WHERE key = 'pinned'"):
        assert sql_as(bob, sql) == INSUFFICIENT_PRIVILEGE
    # A summary he adds is the next version; a state value of hers he may write (then his,
    # not hers), and carol's row he may delete. His chatmem's update writes his own state
    # there (store.memory_state.PER_WRITER), starting from hers, and leaves hers and carol's.
    assert add_summary(bob, session_id, 9, "用户叫马洛里。") == INSUFFICIENT_PRIVILEGE
    assert add_summary(bob, session_id, 3, "用户叫马洛里。") == 1
    carol_url = old.url(carol)
    assert set_state(carol_url, session_id, "carol", "1") == 1
    assert sql_as(bob, "DELETE FROM strategy_state WHERE key = 'carol'") == 1
    assert set_state(carol_url, session_id, "carol", "1") == 1
    with Store(bob) as store:
        store.memory.set_strategy_state(session_id, "summary", {"boundary_turn": 4})
    with old.server.admin(old.database) as conn:
        assert conn.execute(STATE).fetchall() == [
            ("summary", "boundary_turn", "3", "ann", "ann"),
            ("summary", "carol", "1", carol, "ann"),
            ("summary", "pinned", "[]", "ann", "ann"),
            ("summary/bob", "boundary_turn", "4", "bob", "ann"),
            ("summary/bob", "pinned", "[]", "bob", "ann")]
    # Her own rows are hers to change and delete, his too.
    assert sql_as(ann, "UPDATE summaries SET text = text || ' 安娜'") == 3
    assert sql_as(ann, "DELETE FROM strategy_state") == 5
    assert sql_as(ann, "DELETE FROM summaries WHERE version = 3") == 1
    # An older chatmem (one that knows no p030) refuses the upgraded database.
    known = [fn.__name__ for fn in schema.MIGRATIONS].index(P030)
    monkeypatch.setattr(schema.MIGRATION_LIST, "functions", schema.MIGRATIONS[:known])
    with pytest.raises(NotChatmemDatabase) as e:
        PostgresBackend(ann)
    assert e.value.newer_schema == schema.MIGRATIONS[-1].__name__


@pytest.mark.parametrize(("writer", "other"), [("ann", "bob"), ("bob", "ann")])
def test_a_summary_added_meanwhile_takes_nothing_from_chatmems_own(
        team: Team, writer: str, other: str) -> None:
    """Two writers add the session's next summary version at once: the other's plain SQL
    (no chatmem write lock) in an open transaction, committed while chatmem's waits on its
    row. chatmem's update failed on the unique key ("duplicate key value…", her memory not
    updated); now it takes the version after, and both are kept."""
    ann = team.url("ann")
    session_id = shared_session(ann, "summary")
    with psycopg.connect(team.url(other)) as conn:
        conn.execute("INSERT INTO summaries (session_id, strategy, version, text, created_at)"
                     " VALUES (%s, 'summary', 1, '他的摘要', %s)", [session_id, NOW])
        committed = threading.Timer(1.0, conn.commit)
        committed.start()
        try:
            with Store(team.url(writer)) as store:
                added = store.memory.add_summary(session_id, "summary", "她住在杭州。",
                                                 covered_ids=[])
        finally:
            committed.join()
    assert (added.version, added.text) == (2, "她住在杭州。")
    assert team.rows("SELECT version, text, writer FROM summaries ORDER BY version") == [
        (1, "他的摘要", other), (2, "她住在杭州。", writer)]
