"""Who inserted a message or a turn (p023): the server stamps `writer`, and an older
database upgrades to it losing nothing, its rows read as before; a database so upgraded
is refused by an older chatmem, as any newer one is."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from grantees import INSUFFICIENT_PRIVILEGE, shared_session, sql_as
from pg import NOW, OldHistory, PostgresServer, Team, migrated_before, older_chatmem_refuses
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

P023 = "p023_who_wrote_a_row"


@pytest.fixture
def before_p023(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P023) as old:
        yield old



def add_turn(url: str, session_id: int, number: int, text: str, context: str) -> int:
    """A message and the turn that asked it, by plain SQL as `url`'s role: its id."""
    with psycopg.connect(url, autocommit=True) as conn:
        message_id = int(conn.execute(
            "INSERT INTO messages (session_id, position, turn, role, content, created_at)"
            " VALUES (%s, %s, %s, 'user', %s, %s) RETURNING id",
            [session_id, number, number, text, NOW]).fetchone()[0])
        conn.execute(
            "INSERT INTO turns (session_id, number, history_turn, status, input, context,"
            " params, strategy, user_message_id, created_at) VALUES (%s, %s, %s, 'ok', %s,"
            " %s, '{}', 'buffer', %s, %s)",
            [session_id, number, number, text, context, message_id, NOW])
    return message_id


def read_as(url: str, session_id: int, ids: list[int]) -> tuple[dict[int, str], set[int]]:
    with Store(url) as store:
        return store.history.speakers(session_id, ids), store.history.asked(session_id, ids)


def test_an_older_database_upgrades_its_rows_read_as_before(
        before_p023: OldHistory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p023
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann)
    hers = add_turn(ann, session_id, 1, "我叫安娜。", "{}")
    # Bob's turn as chatmem's own client stored it before p023: his role in its context.
    his = add_turn(bob, session_id, 2, "我叫小明。", '{"speaker": "bob"}')
    # The hole: one he inserted naming nobody was the owner's.
    forged = add_turn(bob, session_id, 3, "我住在深圳。", "{}")
    with old.server.admin(old.database) as conn:
        rows = sorted(conn.execute("SELECT id, content, owner FROM messages").fetchall())

    PostgresBackend(old.url(old.keeper)).close()

    with old.server.admin(old.database) as conn:
        assert sorted(conn.execute("SELECT id, content, owner FROM messages").fetchall()) \
            == rows
        assert conn.execute("SELECT count(*) FROM messages WHERE writer IS NOT NULL"
                            " UNION ALL SELECT count(*) FROM turns WHERE writer IS NOT NULL"
                            ).fetchall() == [(0,), (0,)]
    # Read as before: what no row says otherwise stays the owner's (nothing tells his
    # forged row from hers); what a context named stays his.
    assert read_as(ann, session_id, [hers, his, forged]) == ({his: "bob"}, {hers, his, forged})
    # From now on the server says who inserted it, whatever the context names.
    again = add_turn(bob, session_id, 4, "我叫小明。", '{"speaker": "ann"}')
    assert read_as(ann, session_id, [hers, again]) == ({again: "bob"}, {hers})
    assert read_as(bob, session_id, [again])[0] == {again: "bob"}
    assert sql_as(bob, "UPDATE messages SET writer = NULL WHERE id = %s",
                  [again]) == INSUFFICIENT_PRIVILEGE
    # An older chatmem (one that knows no p023) refuses the upgraded database.
    older_chatmem_refuses(ann, P023, monkeypatch)


def test_a_copy_keeps_who_wrote_a_message(team: Team, tmp_path: Path) -> None:
    """Copied out (a file stamps no writer; a database stamps the copier), a message a grantee
    inserted stays his: kept as its speaker, over whatever name his turn wrote."""
    from chatmem.store.copying import copy_sessions

    ann, bob = team.url("ann"), team.url("bob")
    session_id = shared_session(ann)
    add_turn(ann, session_id, 1, "我叫安娜。", "{}")
    add_turn(bob, session_id, 2, "我住在深圳。", '{"speaker": "ann"}')
    with psycopg.connect(bob, autocommit=True) as conn:  # the model's reply to his turn
        conn.execute("INSERT INTO messages (session_id, position, turn, role, content,"
                     " created_at) VALUES (%s, 3, 2, 'assistant', '好的。', %s)",
                     [session_id, NOW])
    with Store(ann) as source:
        said = source.history.messages(session_id)
        assert source.history.speakers(session_id, [m.id for m in said]) \
            == {said[1].id: "bob"}
    with Store(ann) as source, Store(tmp_path / "copy.db") as target:
        copy_sessions(source, target, ["旅行"])
        copied = target.sessions.find_session("旅行")
        assert copied is not None
        ids = [m.id for m in target.history.messages(copied.id)]
        assert target.history.speakers(copied.id, ids) == {ids[1]: "bob"}
        assert target.history.asked(copied.id, ids) == set(ids[:2])  # the inputs
    # A fork (the owner's own copy, or the grantee's of ann/旅行) keeps it his too, and in
    # the grantee's her message hers (p024: it read as his).
    for url, source, hers in ((ann, "旅行", {}), (bob, "ann/旅行", {0: "ann"})):
        with Store(url) as store:
            store.forks.fork_session(source, "分支")
            forked = store.sessions.find_session("分支")
            assert forked is not None
            said = store.history.messages(forked.id)
            assert store.history.speakers(forked.id, [m.id for m in said]) \
                == {said[1].id: "bob", **{said[i].id: w for i, w in hers.items()}}, url


def test_an_older_databases_facts_keep_their_speakers_through_the_upgrade(
        before_p023: OldHistory, scripted: ScriptedProvider) -> None:
    """Facts stored before p023 keep no speaker: the owner's, or read as the member's whose
    turn stated them, as before; after the upgrade the owner's value of the key bob stated
    lives beside his, not over it (each speaker's own, FactRecord.speaker)."""
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p023
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann)
    hers = add_turn(ann, session_id, 1, "我叫安娜。", "{}")
    his = add_turn(bob, session_id, 2, "我住在巴黎。", '{"speaker": "bob"}')
    facts = "SELECT id, key, value, source_message_id, owner FROM facts ORDER BY id"
    with psycopg.connect(ann, autocommit=True) as conn:
        for key, value, message, turn in (("名字", "安娜", hers, 1), ("城市", "巴黎", his, 2)):
            conn.execute(
                "INSERT INTO facts (scope, session_id, key, value, source_message_id,"
                " source_turn, source_session_id, created_at, updated_at) VALUES"
                " ('session', %s, %s, %s, %s, %s, %s, %s, %s)",
                [session_id, key, value, message, turn, session_id, NOW, NOW])
        # The extractor read both turns already.
        conn.execute("INSERT INTO strategy_state (session_id, strategy, key, value)"
                     " VALUES (%s, 'facts', 'done_turn', '2')", [session_id])
        rows = conn.execute(facts).fetchall()

    PostgresBackend(old.url(old.keeper)).close()

    with psycopg.connect(ann, autocommit=True) as conn:
        assert conn.execute(facts).fetchall() == rows
        assert conn.execute("SELECT count(*) FROM facts WHERE speaker IS NOT NULL"
                            ).fetchone() == (0,)
    settings = Settings(system="Be brief.", user="ann", user_facts=False)
    with Store(ann) as store:
        group = open_session(store, settings, scripted, "旅行", strategy="entity")
        live = group.state.live_facts()
        assert group.state.stated_by_others(live) == {rows[1][0]: "bob"}
        group.run_turn("我住在罗马。")
        assert [(f.key, f.value, f.speaker) for f in store.facts.facts(
            session_id=session_id)] == [("名字", "安娜", None), ("城市", "巴黎", "bob"),
                                        ("城市", "罗马", None)]
