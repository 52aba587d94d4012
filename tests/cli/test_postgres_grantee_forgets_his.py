"""A write share's grantee forgets only the facts he stated in the owner's session
(PostgreSQL, p033): bob's `chatmem facts forget ann/笔记 1` forgot ann's own `名字 = 安娜`
(no speaker: hers), and it left her `facts list`; his plain SQL setting `deleted_at` did the
same. Now chatmem refuses it in one line and the server refuses it too; his own facts, and
the owner's forget, purge and remove-user, work as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import run
from grantees import INSUFFICIENT_PRIVILEGE, NOT_PERMITTED, shared_session, sql_as
from pg import NOW, OldHistory, PostgresServer, Team, migrated_before, older_chatmem_refuses

pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

P033 = "p033_grantee_forgets_only_his_facts"
CASES = [
    ("笔记", "我住在杭州。", "我住在深圳。", "城市", "杭州", "深圳"),
    ("notes", "My name is Ann.", "My name is Bob.", "name", "Ann", "Bob"),
]


def setup(team: Team, tmp_path: Path, session: str, hers: str,
          his: str) -> tuple[str, str, Path]:
    config = tmp_path / "config.toml"
    config.write_text('provider = "scripted"\nuser_facts = false\n', encoding="utf-8")
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", session, hers, "--strategy", "entity", "--config", str(config), code=0)
    run(ann, "sessions", "share", session, "--with", "bob", "--write", code=0)
    run(bob, "ask", f"ann/{session}", his, "--config", str(config), code=0)
    return ann, bob, config


def listed(url: str, session: str, config: Path) -> list[tuple[str, str, str | None]]:
    """What `facts list` shows of the session: key, value, who stated it."""
    shown = json.loads(run(url, "facts", "list", session, "--json", "--config", str(config),
                           code=0).stdout)
    return sorted((f["key"], f["value"], f["speaker"]) for f in shown
                  if f["scope"] == "session")


def fact_ids(team: Team) -> dict[str | None, int]:
    """Who stated it → id, of the live session facts."""
    return {speaker: int(i) for i, speaker in team.rows(
        "SELECT id, speaker FROM facts WHERE deleted_at IS NULL AND scope = 'session'")}


@pytest.mark.parametrize(("session", "hers", "his", "key", "her_value", "his_value"), CASES)
def test_a_grantee_forgets_his_fact_not_hers(
        team: Team, tmp_path: Path, session: str, hers: str, his: str, key: str,
        her_value: str, his_value: str) -> None:
    ann, bob, config = setup(team, tmp_path, session, hers, his)
    both = sorted([(key, her_value, None), (key, his_value, "bob")])
    ids = fact_ids(team)
    assert listed(ann, session, config) == both
    assert set(ids) == {None, "bob"}
    refused = run(bob, "facts", "forget", f"ann/{session}", str(ids[None]),
                  "--config", str(config), code=NOT_PERMITTED)
    assert refused.stderr.splitlines() == [
        f"error: fact {ids[None]} of session 'ann/{session}' ({key} = {her_value}) was"
        " stated by ann, not you: only they or ann, its owner, can forget it"]
    assert listed(ann, session, config) == both
    assert listed(bob, f"ann/{session}", config) == both
    # His own is his to forget.
    run(bob, "facts", "forget", f"ann/{session}", str(ids["bob"]), "--config", str(config),
        code=0)
    assert fact_ids(team) == {None: ids[None]}
    assert listed(ann, session, config) == [(key, her_value, None)]
    # And hers is hers: she forgets it, then purges it.
    run(ann, "facts", "forget", session, str(ids[None]), "--config", str(config), code=0)
    assert listed(ann, session, config) == []
    run(ann, "facts", "forget", session, str(ids[None]), "--purge", "--yes",
        "--config", str(config), code=0)
    assert team.rows("SELECT count(*) FROM facts WHERE id = %s", [ids[None]]) == [(0,)]


@pytest.mark.parametrize(("session", "hers", "his", "key", "her_value", "his_value"), CASES)
def test_by_sql_a_grantee_forgets_deletes_or_rewrites_none_of_hers(
        team: Team, tmp_path: Path, session: str, hers: str, his: str, key: str,
        her_value: str, his_value: str) -> None:
    ann, bob, config = setup(team, tmp_path, session, hers, his)
    ids = fact_ids(team)
    stored = team.rows("SELECT * FROM facts ORDER BY id")
    for sql, params in [
        ("UPDATE facts SET deleted_at = %s WHERE id = %s", [NOW, ids[None]]),
        ("DELETE FROM facts WHERE id = %s", [ids[None]]),
        ("UPDATE facts SET value = %s WHERE id = %s", ["Mallory", ids[None]]),
        ("UPDATE facts SET key = %s, speaker = NULL WHERE id = %s", ["别的", ids[None]]),
        ("UPDATE facts SET speaker = 'bob' WHERE id = %s", [ids[None]]),
    ]:
        assert sql_as(bob, sql, params) == INSUFFICIENT_PRIVILEGE, sql
    assert team.rows("SELECT * FROM facts ORDER BY id") == stored
    assert (key, her_value, None) in listed(ann, session, config)
    # A use of her fact is no change of it.
    assert sql_as(bob, "UPDATE facts SET used_at = %s WHERE id = %s", [NOW, ids[None]]) == 1
    # His own he forgets and deletes; hers she does.
    assert sql_as(bob, "UPDATE facts SET deleted_at = %s WHERE id = %s", [NOW, ids["bob"]]) == 1
    assert sql_as(bob, "DELETE FROM facts WHERE id = %s", [ids["bob"]]) == 1
    assert sql_as(ann, "UPDATE facts SET deleted_at = %s WHERE id = %s", [NOW, ids[None]]) == 1


def test_a_member_relayed_through_him_is_his_to_forget_and_a_third_roles_is_not(
        team: Team) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    session_id = shared_session(ann)
    insert = ("INSERT INTO facts (scope, session_id, key, value, created_at, updated_at,"
              " speaker) VALUES ('session', %s, %s, %s, %s, %s, %s)")
    assert sql_as(bob, insert, [session_id, "城市", "深圳", NOW, NOW, "小红 (via bob)"]) == 1
    assert sql_as(ann, insert, [session_id, "名字", "卡萝", NOW, NOW, "carol (via ann)"]) == 1
    relayed = "UPDATE facts SET deleted_at = %s WHERE speaker = %s"
    assert sql_as(bob, relayed, [NOW, "小红 (via bob)"]) == 1
    assert sql_as(bob, relayed, [NOW, "carol (via ann)"]) == INSUFFICIENT_PRIVILEGE


def test_remove_user_still_erases_a_grantees_facts(team: Team, tmp_path: Path) -> None:
    setup(team, tmp_path, *CASES[0][:3])
    assert team.rows("SELECT count(*) FROM facts") == [(2,)]
    admin = team.server.url(team.database)
    run(admin, "admin", "remove-user", "ann", "--yes", code=0)
    assert team.rows("SELECT count(*) FROM facts") == [(0,)]


@pytest.fixture
def before_p033(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P033) as old:
        yield old


def test_an_older_database_upgrades_keeping_its_facts(
        before_p033: OldHistory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p033
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann)
    insert = ("INSERT INTO facts (scope, session_id, key, value, created_at, updated_at,"
              " speaker) VALUES ('session', %s, %s, %s, %s, %s, %s)")
    assert sql_as(ann, insert, [session_id, "名字", "安娜", NOW, NOW, None]) == 1
    assert sql_as(bob, insert, [session_id, "城市", "深圳", NOW, NOW, None]) == 1
    with old.server.admin(old.database) as conn:
        stored = conn.execute("SELECT * FROM facts ORDER BY id").fetchall()
    PostgresBackend(old.url(old.keeper)).close()
    with old.server.admin(old.database) as conn:
        assert conn.execute("SELECT * FROM facts ORDER BY id").fetchall() == stored
    forget = "UPDATE facts SET deleted_at = %s WHERE key = %s"
    assert sql_as(bob, forget, [NOW, "名字"]) == INSUFFICIENT_PRIVILEGE
    assert sql_as(bob, forget, [NOW, "城市"]) == 1
    older_chatmem_refuses(ann, P033, monkeypatch)


@pytest.mark.parametrize(("hers", "his", "forget", "key", "her_value"), [
    ("我住在杭州。", "我住在深圳。", "忘掉我的城市。", "城市", "杭州"),
    ("I live in Rome.", "I live in Paris.", "Forget my city.", "city", "Rome"),
])
def test_his_forget_my_city_in_her_session_forgets_his_only(
        team: Team, tmp_path: Path, hers: str, his: str, forget: str, key: str,
        her_value: str) -> None:
    ann, bob, config = setup(team, tmp_path, "proj", hers, his)
    run(bob, "ask", "ann/proj", forget, "--config", str(config), code=0)
    assert listed(ann, "proj", config) == [(key, her_value, None)]
