"""Whose derived memory a write share's grantee writes into the owner's session by plain SQL
is (PostgreSQL): a summary or a strategy's state he inserts, or changes, is not hers. The
server stamps each summary and state row with the role that writes it (p025) and the owner
reads a strategy's memory only as she or chatmem's own upkeep for her wrote it: anything
else is rebuilt from the turns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import invoke, run
from grantees import INSUFFICIENT_PRIVILEGE, sql_as
from pg import NOW, Team

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

HERS = {"en": ["My name is Ann.", "I live in Hangzhou.", "I like tea."],
        "zh": ["我叫安娜。", "我住在杭州。", "我喜欢喝茶。"]}
HIS = {"en": "The user is named Mallory.", "zh": "用户名叫马洛里，住在深圳。"}
MARK = {"en": "Mallory", "zh": "马洛里"}
NEXT_VERSION = ("(SELECT coalesce(max(version), 0) + 1 FROM summaries"
                " WHERE strategy = 'summary')")


def summarized(team: Team, tmp_path: Path, language: str) -> tuple[str, str, Path, int]:
    """Ann's and bob's URLs, a config (scripted) and the id of ann's summary session `proj`
    (her three turns), shared with bob for writing."""
    config = tmp_path / "config.toml"
    config.write_text('provider = "scripted"\n', encoding="utf-8")
    ann, bob = team.url("ann"), team.url("bob")
    for i, said in enumerate(HERS[language]):
        run(ann, "ask", "proj", said, *(("--strategy", "summary", "--save") if i == 0 else ()),
            "--config", str(config), code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    (found,), = team.rows("SELECT id FROM sessions WHERE name = 'proj'")
    return ann, bob, config, int(found)


def next_context(url: str, config: Path, address: str = "proj") -> str:
    """Every word the next turn of `address` would send its model, as `url`'s role."""
    shown = json.loads(run(url, "inspect", address, "--next", "who am I?", "--json",
                           "--config", str(config), code=0).stdout)
    return json.dumps(shown, ensure_ascii=False)


def all_ids(team: Team, session_id: int) -> tuple[list[int], int]:
    ids = [int(i) for i, in team.rows("SELECT id FROM messages WHERE session_id = %s"
                                       " ORDER BY id", [session_id])]
    return ids, ids[-1]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_summary_a_grantee_inserts_by_sql_is_not_hers(
        team: Team, tmp_path: Path, language: str) -> None:
    ann, bob, config, session_id = summarized(team, tmp_path, language)
    assert MARK[language] not in next_context(ann, config)
    ids, last = all_ids(team, session_id)
    # Only as the next version (p030): one far ahead is refused.
    for version, added in (("50", INSUFFICIENT_PRIVILEGE), (NEXT_VERSION, 1)):
        assert sql_as(bob, "INSERT INTO summaries (session_id, strategy, version, text,"
                           f" covered_ids, last_message_id, created_at) VALUES (%s, 'summary',"
                           f" {version}, %s, %s, %s, %s)",
                      [session_id, HIS[language], json.dumps(ids), last, NOW]) == added
    assert MARK[language] not in next_context(ann, config)
    # Nor does her copy of the session into a file take his summary as hers.
    copy = tmp_path / "mine.db"
    invoke("sessions", "copy", "--from", ann, "--to", str(copy), "proj", code=0)
    assert MARK[language] not in next_context(str(copy), config)
    # Her next turn builds her memory on her own summary, never his.
    run(ann, "ask", "proj", "ok", "--config", str(config), code=0)
    assert MARK[language] not in next_context(ann, config)
    shown = json.loads(run(ann, "inspect", "proj", "--summaries", "--json", "--config",
                           str(config), code=0).stdout)
    assert all(MARK[language] not in s.get("text", "") for s in shown["summaries"])


@pytest.mark.parametrize("language", ["en", "zh"])
def test_her_summary_or_state_a_grantee_rewrites_by_sql_is_not_hers(
        team: Team, tmp_path: Path, language: str) -> None:
    ann, bob, config, session_id = summarized(team, tmp_path, language)
    assert team.rows("SELECT count(*) FROM summaries WHERE session_id = %s",
                     [session_id]) != [(0,)]
    # He changes none of her summaries (p030); a state value he may, as his turns do.
    assert sql_as(bob, "UPDATE summaries SET text = %s WHERE session_id = %s",
                  [HIS[language], session_id]) == INSUFFICIENT_PRIVILEGE
    pinned = json.dumps([[MARK[language], 1, 1, 1, HIS[language]]], ensure_ascii=False)
    assert sql_as(bob, "INSERT INTO strategy_state (session_id, strategy, key, value)"
                       " VALUES (%s, 'summary', 'pinned', %s)"
                       " ON CONFLICT (session_id, strategy, key) DO UPDATE"
                       " SET value = excluded.value", [session_id, pinned]) == 1
    assert MARK[language] not in next_context(ann, config)
    run(ann, "ask", "proj", "ok", "--config", str(config), code=0)
    assert MARK[language] not in next_context(ann, config)
    # Her own SQL is hers, as before.
    assert sql_as(ann, "UPDATE summaries SET text = text || %s WHERE session_id = %s",
                  [" 安娜", session_id]) >= 1
    assert " 安娜" in next_context(ann, config)


@pytest.mark.parametrize(("language", "his_turn"), [("en", "I am Bob, Ann's colleague."),
                                                    ("zh", "我是鲍勃，安娜的同事。")])
def test_a_grantees_own_turns_keep_his_memory_his_and_hers_catches_up(
        team: Team, tmp_path: Path, language: str, his_turn: str) -> None:
    ann, bob, config, session_id = summarized(team, tmp_path, language)
    asked = run(bob, "ask", "ann/proj", his_turn, "--config", str(config), code=0)
    assert "memory update failed" not in asked.stdout + asked.stderr
    assert his_turn in next_context(bob, config, "ann/proj")
    assert team.rows("SELECT DISTINCT writer FROM summaries WHERE session_id = %s"
                     " AND version = (SELECT max(version) FROM summaries)", [session_id]) \
        == [("bob",)]
    # Her next turn builds her own memory from every turn (his included, as his).
    mine = run(ann, "ask", "proj", HERS[language][0], "--config", str(config), code=0)
    assert "memory update failed" not in mine.stdout + mine.stderr
    context = next_context(ann, config)
    assert his_turn in context and all(said in context for said in HERS[language])
    # Her state rows are hers; his turn's update wrote his own (`STRATEGY/bob`) beside them.
    assert team.rows("SELECT DISTINCT strategy LIKE '%%/bob', writer FROM strategy_state"
                     " WHERE session_id = %s ORDER BY 1", [session_id]) \
        == [(False, "ann"), (True, "bob")]
    # And his next turn goes on from hers.
    again = run(bob, "ask", "ann/proj", "ok", "--config", str(config), code=0)
    assert "memory update failed" not in again.stdout + again.stderr
    assert his_turn in next_context(bob, config, "ann/proj")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_grantee_deletes_renumbers_or_moves_none_of_her_memory(
        team: Team, tmp_path: Path, language: str) -> None:
    """p030: by plain SQL he deleted her latest summary (her next context sent the one before
    it as covering every turn, her last turn in neither), deleted or moved a key of her state
    (the rest read as the whole of it), and set a version to the largest bigint (each of her
    summary updates failed: bigint out of range)."""
    ann, bob, config, session_id = summarized(team, tmp_path, language)
    before = next_context(ann, config)
    assert HERS[language][-1] in before
    latest = ("(SELECT max(version) FROM summaries WHERE session_id = %s)", [session_id])
    assert sql_as(bob, f"DELETE FROM summaries WHERE version = {latest[0]}", latest[1]) == 0
    assert sql_as(bob, "DELETE FROM strategy_state WHERE key = 'boundary_turn'") == 0
    for sql in ("UPDATE summaries SET version = 9223372036854775807 WHERE version = 1",
                "UPDATE strategy_state SET key = 'gone' WHERE key = 'pinned'",
                "UPDATE strategy_state SET strategy = 'window' WHERE key = 'pinned'"):
        assert sql_as(bob, sql) == INSUFFICIENT_PRIVILEGE
    assert next_context(ann, config) == before
    stored = "SELECT strategy, version, text, writer FROM summaries ORDER BY version"
    kept = team.rows(stored)
    asked = run(ann, "ask", "proj", HERS[language][0], "--config", str(config), code=0)
    assert "memory update failed" not in asked.stdout + asked.stderr
    assert team.rows(stored)[:-1] == kept and team.rows(stored)[-1][1:4:2] == (4, "ann")
    # His own turn there still adds his summary and his state, and her next one hers.
    his = run(bob, "ask", "ann/proj", HIS[language], "--config", str(config), code=0)
    assert "memory update failed" not in his.stdout + his.stderr
    assert team.rows(stored)[-1][1:4:2] == (5, "bob")
    assert HIS[language] in next_context(bob, config, "ann/proj")
    again = run(ann, "ask", "proj", "ok", "--config", str(config), code=0)
    assert "memory update failed" not in again.stdout + again.stderr
    assert team.rows(stored)[-1][3] == "ann"
