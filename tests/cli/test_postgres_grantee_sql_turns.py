"""Whose words a turn inserted by plain SQL holds (PostgreSQL, `user_facts = true`): a write
share's grantee who INSERTs a message and a turn into the owner's session himself, naming no
speaker (or naming her), is read as himself, not as the owner. The server stamps every
message and turn with the role that inserted it (`writer`, p023), which no role writes, and
the engine reads that, not a speaker the grantee wrote into the turn's context."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run
from grantees import INSUFFICIENT_PRIVILEGE, profile, session_facts, shared_after, sql_as
from pg import NOW, Team

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")


def insert_turn(url: str, text: str, context: str = "{}") -> None:
    """What a grantee's psql session adds: his message, then a turn that asked it, at the
    end of the owner's session (where p018 lets him)."""
    with psycopg.connect(url) as conn:
        session_id, position, turn = conn.execute(
            "SELECT s.id, coalesce(max(m.position), 0), coalesce(max(m.turn), 0)"
            " FROM sessions s LEFT JOIN messages m ON m.session_id = s.id"
            " WHERE s.name = 'proj' GROUP BY s.id").fetchone()
        message_id = conn.execute(
            "INSERT INTO messages (session_id, position, turn, role, content, created_at)"
            " VALUES (%s, %s, %s, 'user', %s, %s) RETURNING id",
            [session_id, position + 1, turn + 1, text, NOW]).fetchone()[0]
        number = conn.execute("SELECT coalesce(max(number), 0) FROM turns"
                              " WHERE session_id = %s", [session_id]).fetchone()[0]
        conn.execute(
            "INSERT INTO turns (session_id, number, history_turn, status, input, context,"
            " params, strategy, user_message_id, created_at) VALUES (%s, %s, %s, 'ok', %s,"
            " %s, '{}', 'buffer', %s, %s)",
            [session_id, number + 1, turn + 1, text, context, message_id, NOW])


@pytest.mark.parametrize(("words", "context"), [
    (("My name is Mallory.", "name", "Mallory", "My name is Ann.", "Ann"), "{}"),
    (("我住在深圳。", "城市", "深圳", "我住在杭州。", "杭州"), "{}"),
    # A speaker he names in the context is not believed: not hers, not a stranger's.
    (("我住在深圳。", "城市", "深圳", "我住在杭州。", "杭州"), '{"speaker": "ann"}'),
    (("My name is Mallory.", "name", "Mallory", "My name is Ann.", "Ann"),
     '{"speaker": "小明"}'),
])
def test_a_turn_a_grantee_inserts_by_sql_is_his(
        team: Team, tmp_path: Path, words: tuple[str, str, str, str, str],
        context: str) -> None:
    his, key, his_value, hers, her_value = words
    ann, bob, config = shared_after(team, tmp_path, hers)
    c = ("--config", str(config))
    assert profile(ann, config) == {key: her_value}
    insert_turn(bob, his, context)
    # Her next turn catches his up: not her profile, and in the session as his.
    run(ann, "ask", "proj", "ok", *c, code=0)
    assert profile(ann, config) == {key: her_value}
    assert session_facts(ann, "proj", config) == {key: (his_value, "bob")}


def test_no_role_writes_who_wrote_a_row(team: Team, tmp_path: Path) -> None:
    """The stamp is the server's: not named in an INSERT, not changed by an UPDATE, by the
    grantee nor by the owner."""
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "proj", "我叫安娜。", "--strategy", "entity", "--provider", "scripted",
        code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    insert_turn(bob, "你好")
    assert sorted(team.rows("SELECT writer, count(*) FROM messages GROUP BY writer")) == [
        ("ann", 2), ("bob", 1)]
    assert sorted(team.rows("SELECT writer, count(*) FROM turns GROUP BY writer")) == [
        ("ann", 1), ("bob", 1)]
    for url in (ann, bob):
        for table in ("messages", "turns"):
            assert sql_as(url, f"UPDATE {table} SET writer = 'ann'") == INSUFFICIENT_PRIVILEGE
    (session_id,), = team.rows("SELECT id FROM sessions")
    assert sql_as(bob, "INSERT INTO messages (session_id, position, turn, role, content,"
                       " created_at, writer) VALUES (%s, 4, 3, 'user', 'x', %s, 'ann')",
                  [session_id, NOW]) == INSUFFICIENT_PRIVILEGE
