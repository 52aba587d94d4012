"""Who wrote a summary or a strategy's state, as the server says it (p025): the role that
inserted or changed the row, whatever its statement names. A reader trusts a strategy's
derived memory only as it or the session's owner wrote it. An older database upgrades to
it losing nothing, its rows read as before; a database so upgraded is refused by an older
chatmem, as any newer one is."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from grantees import shared_session, sql_as
from pg import NOW, OldHistory, PostgresServer, migrated_before, older_chatmem_refuses

from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

P025 = "p025_derived_memory_says_who_wrote_it"
SUMMARIES = "SELECT session_id, strategy, version, text, covered_ids, owner FROM summaries" \
            " ORDER BY id"
STATE = "SELECT session_id, strategy, key, value, owner FROM strategy_state" \
        " ORDER BY strategy, key"


@pytest.fixture
def before_p025(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P025) as old:
        yield old


def add_summary(url: str, session_id: int, version: int, text: str) -> None:
    assert sql_as(url, "INSERT INTO summaries (session_id, strategy, version, text,"
                       " created_at) VALUES (%s, 'summary', %s, %s, %s)",
                  [session_id, version, text, NOW]) == 1


def set_state(url: str, session_id: int, key: str, value: str) -> None:
    assert sql_as(url, "INSERT INTO strategy_state (session_id, strategy, key, value)"
                       " VALUES (%s, 'summary', %s, %s) ON CONFLICT (session_id, strategy, key)"
                       " DO UPDATE SET value = excluded.value", [session_id, key, value]) == 1


def memory(url: str, session_id: int) -> tuple[dict[str, object], list[tuple[int, str]]]:
    """The summary strategy's state and summary versions as `url`'s role reads them."""
    with Store(url) as store:
        latest = store.memory.latest_summary(session_id, "summary")
        versions = [(s.version, s.text) for s in store.memory.summaries(session_id)]
        assert (latest.version if latest else None) == (versions[-1][0] if versions else None)
        return store.memory.strategy_state(session_id, "summary"), versions


def test_an_older_databases_derived_memory_reads_as_before_and_new_rows_say_who(
        before_p025: OldHistory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p025
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann, "summary")
    add_summary(ann, session_id, 1, "安娜住在杭州。")
    set_state(ann, session_id, "boundary_turn", "0")
    add_summary(bob, session_id, 2, "用户叫马洛里。")  # before p025: read as before
    set_state(bob, session_id, "released", "0")
    with old.server.admin(old.database) as conn:
        summaries = conn.execute(SUMMARIES).fetchall()
        state = conn.execute(STATE).fetchall()
    # What chatmem before p025 read: every row.
    before = ({"boundary_turn": 0, "released": 0},
              [(1, "安娜住在杭州。"), (2, "用户叫马洛里。")])

    PostgresBackend(old.url(old.keeper)).close()

    with old.server.admin(old.database) as conn:
        assert conn.execute(SUMMARIES).fetchall() == summaries
        assert conn.execute(STATE).fetchall() == state
        assert conn.execute("SELECT DISTINCT writer FROM summaries UNION"
                            " SELECT DISTINCT writer FROM strategy_state").fetchall() == [(None,)]
    assert memory(ann, session_id) == before == memory(bob, session_id)
    # From now on his summary is his: not hers, his own to read.
    add_summary(bob, session_id, 3, "用户叫马洛里，住在深圳。")
    assert memory(ann, session_id) == before
    assert memory(bob, session_id)[1][-1] == (3, "用户叫马洛里，住在深圳。")
    # Nor is a state row he writes, or names her as its writer in: the strategy's state is
    # absent for her (her next update goes on from the summaries she reads, who67), whole
    # for him.
    assert sql_as(bob, "INSERT INTO strategy_state (session_id, strategy, key, value, writer)"
                       " VALUES (%s, 'summary', 'x', '1', 'ann')", [session_id]) == "42501"
    assert sql_as(bob, "UPDATE strategy_state SET writer = 'ann'") == "42501"
    pinned = [["马洛里", 1, 1, 1, "用户叫马洛里。"]]
    set_state(bob, session_id, "pinned", json.dumps(pinned, ensure_ascii=False))
    assert memory(ann, session_id) == ({}, before[1])
    assert memory(bob, session_id)[0] == {"boundary_turn": 0, "released": 0, "pinned": pinned}
    # Her fork copies none of his state, and only the summaries she reads.
    with Store(ann) as store:
        store.forks.fork_session("旅行", "分支")
        forked = store.sessions.find_session("分支")
        assert forked is not None
        assert store.memory.strategy_state(forked.id, "summary") == {}
        assert [(s.version, s.text) for s in store.memory.summaries(forked.id)] == before[1]
        # Her update's state replaces what she did not trust.
        store.memory.set_strategy_state(session_id, "summary", {"boundary_turn": 1})
    assert memory(ann, session_id) == ({"boundary_turn": 1, "released": 0}, before[1])
    with old.server.admin(old.database) as conn:
        assert conn.execute("SELECT key, value, writer FROM strategy_state WHERE session_id = %s"
                            " ORDER BY key", [session_id]).fetchall() == [
            ("boundary_turn", "1", "ann"), ("released", "0", None)]
    # An older chatmem (one that knows no p025) refuses the upgraded database.
    older_chatmem_refuses(ann, P025, monkeypatch)
