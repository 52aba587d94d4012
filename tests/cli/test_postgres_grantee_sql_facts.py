"""Whose a fact a write share's grantee writes into the owner's session by plain SQL is
(PostgreSQL): his, whatever speaker his statement names (none, the owner, another). The
server sets a session fact's `speaker` to the role that inserts it, or that changes its key
or value, when that role is not the session's owner (p024); the engine reads that. Hers he
neither forgets nor rewrites (p033)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run
from grantees import INSUFFICIENT_PRIVILEGE, session_facts, shared_after, sql_as
from pg import NOW, Team

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")


def session_id(team: Team) -> int:
    (found,), = team.rows("SELECT id FROM sessions WHERE name = 'proj'")
    return int(found)


@pytest.mark.parametrize("named", [None, "ann", "小明"])
@pytest.mark.parametrize(("hers", "key", "her_value", "his_value"), [
    ("My name is Ann.", "name", "Ann", "Mallory"),
    ("我住在杭州。", "城市", "杭州", "深圳"),
])
def test_a_fact_a_grantee_inserts_by_sql_is_his(
        team: Team, tmp_path: Path, named: str | None, hers: str, key: str, her_value: str,
        his_value: str) -> None:
    ann, bob, config = shared_after(team, tmp_path, hers, user_facts=False)
    assert session_facts(ann, "proj", config) == {key: (her_value, None)}
    # Hers is not his to forget (p033).
    assert sql_as(bob, "UPDATE facts SET deleted_at = %s WHERE session_id = %s",
                  [NOW, session_id(team)]) == INSUFFICIENT_PRIVILEGE
    assert sql_as(bob, "INSERT INTO facts (scope, session_id, key, value, created_at,"
                       " updated_at, speaker) VALUES ('session', %s, %s, %s, %s, %s, %s)",
                  [session_id(team), key, his_value, NOW, NOW, named]) == 1
    # Her next turn reads it as his, not as hers, beside hers.
    run(ann, "ask", "proj", "ok", "--config", str(config), code=0)
    assert team.rows("SELECT value, speaker FROM facts WHERE deleted_at IS NULL"
                     " AND scope = 'session' ORDER BY id") == [(her_value, None),
                                                               (his_value, "bob")]


@pytest.mark.parametrize(("hers", "key", "her_value", "his_value"), [
    ("My name is Ann.", "name", "Ann", "Mallory"),
    ("我住在杭州。", "城市", "杭州", "深圳"),
])
def test_her_fact_a_grantee_rewrites_by_sql_is_refused(
        team: Team, tmp_path: Path, hers: str, key: str, her_value: str,
        his_value: str) -> None:
    """p024 made the rewritten fact his, so hers was gone; p033 refuses the rewrite."""
    ann, bob, config = shared_after(team, tmp_path, hers, user_facts=False)
    assert sql_as(bob, "UPDATE facts SET value = %s, speaker = NULL WHERE session_id = %s",
                  [his_value, session_id(team)]) == INSUFFICIENT_PRIVILEGE
    assert session_facts(ann, "proj", config) == {key: (her_value, None)}
    # Her own changes of her facts are hers, as before.
    assert sql_as(ann, "UPDATE facts SET value = %s, speaker = NULL WHERE session_id = %s",
                  [her_value, session_id(team)]) == 1
    assert session_facts(ann, "proj", config) == {key: (her_value, None)}


HISTORY = "SELECT fact_id, key, value, stated_at FROM fact_history ORDER BY id"
ADD_EARLIER = ("INSERT INTO fact_history (fact_id, key, value, source_session_id, stated_at,"
               " replaced_at) VALUES (%s, %s, %s, %s, %s, %s)")


def test_a_grantee_adds_no_earlier_value_to_her_facts_and_deletes_none(
        team: Team, tmp_path: Path) -> None:
    """By plain SQL he added "name was: Mallory" under her fact (`facts list` showed it as
    an earlier value of hers) and deleted her earlier values for good (p029)."""
    ann, bob, config = shared_after(team, tmp_path, "我住在杭州。", user_facts=False)
    run(ann, "ask", "proj", "我住在上海。", "--config", str(config), code=0)
    (fact_id, stated), = team.rows("SELECT id, updated_at FROM facts WHERE deleted_at IS NULL")
    before = team.rows(HISTORY)
    assert [row[1:3] for row in before] == [("城市", "杭州")]

    for key, value, at in (("城市", "深圳", NOW), ("name", "Mallory", NOW),
                           ("城市", "上海", NOW)):
        assert sql_as(bob, ADD_EARLIER, [fact_id, key, value, session_id(team), at,
                                         NOW]) == INSUFFICIENT_PRIVILEGE, value
    assert sql_as(bob, "DELETE FROM fact_history") == 0
    assert team.rows(HISTORY) == before

    # His chatmem keeps the earlier values of his own facts there, as they were.
    run(bob, "ask", "ann/proj", "我住在广州。", "--config", str(config), code=0)
    run(bob, "ask", "ann/proj", "我住在成都。", "--config", str(config), code=0)
    assert team.rows("SELECT value, speaker FROM facts WHERE deleted_at IS NULL"
                     " ORDER BY id") == [("上海", None), ("成都", "bob")]
    his = team.rows("SELECT h.value FROM fact_history h JOIN facts f ON f.id = h.fact_id"
                    " WHERE f.speaker = 'bob'")
    assert his == [("广州",)]
    # Her own rows are hers to change.
    assert sql_as(ann, ADD_EARLIER, [fact_id, "城市", "北京", session_id(team), stated,
                                     NOW]) == 1
    assert sql_as(ann, "DELETE FROM fact_history WHERE fact_id = %s", [fact_id]) == 2
