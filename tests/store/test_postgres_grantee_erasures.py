"""An erasure a write share's grantee counts is one he made (p029): by plain SQL he counted
one with nothing erased (`UPDATE sessions SET erasures = erasures + 1`), and the owner's turn
under way was refused ("text left this session's memory while the reply came"), its reply
not stored. His /retry and his SQL's hide of the last turn still count theirs. An older
database upgrades to it losing nothing (an earlier value of her fact he added before
stays: its owner sees and deletes it); an older chatmem refuses it."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from acting_providers import ActsWhile
from cli_runner import run
from grantees import shared_session, sql_as
from pg import (
    NOW,
    OldHistory,
    PostgresServer,
    Team,
    add_messages,
    migrated_before,
    older_chatmem_refuses,
)
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.engine.resend import resend_last
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store, TurnStatus

P029 = "p029_grantee_counts_only_erasures_and_keeps_fact_history"
COUNT = "UPDATE sessions SET erasures = erasures + 1 WHERE id = %s"
ADD_EARLIER = ("INSERT INTO fact_history (fact_id, key, value, source_session_id, stated_at,"
               " replaced_at) VALUES (%s, '城市', %s, %s, %s, %s)")
HIDE_LAST = ("UPDATE messages SET superseded = 1 WHERE session_id = %s"
             " AND turn = (SELECT max(turn) FROM messages WHERE session_id = %s)")


def erasures(team: Team, session_id: int) -> int:
    (count,), = team.rows("SELECT erasures FROM sessions WHERE id = %s", [session_id])
    return int(count)


def in_one_transaction(url: str, *statements: tuple[str, list[object]]) -> None:
    with psycopg.connect(url) as conn, conn.transaction():
        for sql, params in statements:
            conn.execute(sql, params)


def test_a_count_with_nothing_erased_fails_none_of_the_owners_turns(team: Team) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "proj", "My name is Ann.", "--strategy", "buffer", "--provider", "scripted",
        code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    (session_id,), = team.rows("SELECT id FROM sessions WHERE owner = 'ann'")
    before = erasures(team, session_id)

    # While her reply comes, he counts erasures by plain SQL, erasing nothing.
    def counted() -> None:
        for _ in range(3):
            assert sql_as(bob, COUNT, [session_id]) == 1

    with Store(ann) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "proj")
        engine.provider = ActsWhile("stream", counted)
        assert engine.run_turn("我住在杭州。").status == TurnStatus.OK
    assert team.rows("SELECT input FROM turns WHERE session_id = %s ORDER BY number",
                     [session_id])[-1] == ("我住在杭州。",)
    assert erasures(team, session_id) == before

    # What erases there counts one, by his chatmem (a /retry hides her last turn) or his SQL.
    with Store(bob) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "ann/proj")
        assert resend_last(engine, "I live in Hangzhou.").status == TurnStatus.OK
    assert erasures(team, session_id) == before + 1
    in_one_transaction(bob, (HIDE_LAST, [session_id, session_id]),
                       (COUNT, [session_id]), (COUNT, [session_id]))
    assert erasures(team, session_id) == before + 2
    # The hide a transaction made counts in that one only; nothing changed counts nothing.
    assert sql_as(bob, COUNT, [session_id]) == 1
    in_one_transaction(bob, (HIDE_LAST, [session_id, session_id]), (COUNT, [session_id]))
    assert erasures(team, session_id) == before + 2
    # A change counting no erasure leaves no mark behind once another transaction marks.
    for _ in range(4):
        in_one_transaction(bob, (HIDE_LAST.replace("= 1", "= 1 - superseded"),
                                 [session_id, session_id]))
    assert team.rows("SELECT count(*) FROM chatmem_erasing") == [(1,)]
    # Nobody reads or writes the marks; the owner counts hers as before.
    for sql in ("SELECT count(*) FROM chatmem_erasing",
                "INSERT INTO chatmem_erasing VALUES (1, pg_current_xact_id())"):
        assert sql_as(bob, sql) == sql_as(ann, sql) == "42501"
    assert sql_as(ann, COUNT, [session_id]) == 1
    assert erasures(team, session_id) == before + 3


@pytest.fixture
def before_p029(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P029) as old:
        yield old


def test_an_older_database_upgrades_and_counts_only_erasures(
        before_p029: OldHistory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p029
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann, "buffer")
    add_messages(ann, session_id, ["My name is Ann.", "好的。", "我住在杭州。", "记下了。"])
    with psycopg.connect(ann, autocommit=True) as conn:
        fact_id = conn.execute(
            "INSERT INTO facts (scope, session_id, key, value, source_session_id, created_at,"
            " updated_at) VALUES ('session', %s, '城市', '杭州', %s, %s, %s) RETURNING id",
            [session_id, session_id, NOW, NOW]).fetchone()[0]
    # Before p029 his count with nothing erased stood, and so did an earlier value of her
    # fact she never stated.
    assert sql_as(bob, COUNT, [session_id]) == 1
    assert sql_as(bob, ADD_EARLIER, [fact_id, "深圳", session_id, NOW, NOW]) == 1
    rows = "SELECT id, erasures, owner FROM sessions ORDER BY 1"
    said = ("SELECT position, turn, content, superseded, owner FROM messages ORDER BY 1",
            "SELECT fact_id, key, value, stated_at, owner FROM fact_history ORDER BY 1")
    with old.server.admin(old.database) as conn:
        stored = [conn.execute(sql).fetchall() for sql in (rows, *said)]
    assert stored[0] == [(session_id, 1, "ann")]

    PostgresBackend(old.url(old.keeper)).close()

    with old.server.admin(old.database) as conn:
        assert [conn.execute(sql).fetchall() for sql in (rows, *said)] == stored
    assert sql_as(bob, COUNT, [session_id]) == 1
    assert sql_as(bob, ADD_EARLIER, [fact_id, "深圳", session_id, NOW, NOW]) == "42501"
    assert sql_as(bob, "DELETE FROM fact_history") == 0
    in_one_transaction(bob, (HIDE_LAST, [session_id, session_id]), (COUNT, [session_id]))
    with old.server.admin(old.database) as conn:
        assert conn.execute(rows).fetchall() == [(session_id, 2, "ann")]
    with Store(ann) as store:
        assert [m.content for m in store.history.messages(session_id)] == [
            "My name is Ann.", "好的。"]
    # An older chatmem (one that knows no p029) refuses the upgraded database.
    older_chatmem_refuses(ann, P029, monkeypatch)
