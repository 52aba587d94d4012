"""Whose token counts the owner's budget reads (PostgreSQL): a count of her message a write
share's grantee inserts or changes by plain SQL is not hers. The server stamps each
`token_counts` row with the role that writes it (p026) and a reader trusts only a count it
or the session's owner wrote: any other is counted again from the message's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import invoke, run
from grantees import sql_as
from pg import Team

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

HERS = {"en": ["My name is Ann and I work on the compiler team in Hangzhou.",
               "Our release is planned for the second week of May, after the audit.",
               "Please remember that the staging database moves to the new cluster.",
               "The budget review happens every Thursday with the finance group."],
        "zh": ["我叫安娜，在杭州的编译器团队工作。", "我们的版本计划在五月第二周发布，在审计之后。",
               "请记住预发布数据库要迁移到新的集群。", "预算评审每周四和财务组一起进行。"]}


def counted_session(team: Team, tmp_path: Path, language: str) -> tuple[str, str, Path, int]:
    """Ann's and bob's URLs, a config (scripted) and the id of ann's `proj` (tokens
    strategy, her four turns), shared with bob for writing."""
    config = tmp_path / "config.toml"
    config.write_text('provider = "scripted"\n', encoding="utf-8")
    ann, bob = team.url("ann"), team.url("bob")
    for i, said in enumerate(HERS[language]):
        run(ann, "ask", "proj", said, *(("--strategy", "tokens", "--save") if i == 0 else ()),
            "--config", str(config), code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    (found,), = team.rows("SELECT id FROM sessions WHERE name = 'proj'")
    return ann, bob, config, int(found)


def budget(url: str, config: Path, address: str = "proj") -> tuple[int, int]:
    """(tokens, history messages) the next turn of `address` sends under a 120-token
    budget, as `url`'s role reads its counts."""
    shown = json.loads(run(url, "inspect", address, "--next", "what is planned?", "-s",
                           "tokens", "-p", "max_tokens=120", "--json", "--config",
                           str(config), code=0).stdout)
    history = [m for p in shown["context"]["parts"] if p["kind"] == "history"
               for m in p["messages"]]
    return sum(m["tokens"] for m in history), len(history)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_counts_a_grantee_zeroes_by_sql_are_not_her_budget(
        team: Team, tmp_path: Path, language: str) -> None:
    ann, bob, config, session_id = counted_session(team, tmp_path, language)
    before = budget(ann, config)
    assert before[1] >= 2
    assert sql_as(bob, "UPDATE token_counts SET tokens = 0 WHERE message_id IN"
                       " (SELECT id FROM messages WHERE session_id = %s)", [session_id]) > 0
    assert budget(ann, config) == before
    # Nor when he deletes her counts and puts his own in their place.
    assert sql_as(bob, "DELETE FROM token_counts WHERE message_id IN"
                       " (SELECT id FROM messages WHERE session_id = %s)", [session_id]) > 0
    tokenizers = [t for t, in team.rows("SELECT DISTINCT tokenizer FROM turns"
                                         " WHERE session_id = %s", [session_id])]
    for tokenizer in tokenizers:
        assert sql_as(bob, "INSERT INTO token_counts (message_id, tokenizer, tokens)"
                           " SELECT id, %s, 1 FROM messages WHERE session_id = %s",
                      [tokenizer, session_id]) > 0
    assert budget(ann, config) == before
    # Nor does her copy of the session into a file take his counts as hers.
    copy = tmp_path / "mine.db"
    invoke("sessions", "copy", "--from", ann, "--to", str(copy), "proj", code=0)
    assert budget(str(copy), config) == before
    # Nor her fork of it.
    run(ann, "sessions", "fork", "proj", "分支", code=0)
    assert budget(ann, config, "分支") == before
    # Her next turn counts what she sends anew; her budget after it is as a fresh count's.
    run(ann, "ask", "proj", "ok", "--config", str(config), code=0)
    after = budget(ann, config)
    sql_as(bob, "UPDATE token_counts SET tokens = 0 WHERE message_id IN"
                " (SELECT id FROM messages WHERE session_id = %s)", [session_id])
    assert budget(ann, config) == after


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_grantees_own_turns_keep_counting(team: Team, tmp_path: Path, language: str) -> None:
    ann, bob, config, _ = counted_session(team, tmp_path, language)
    before = budget(ann, config)
    run(bob, "ask", "ann/proj", HERS[language][0], "--config", str(config), code=0)
    assert budget(bob, config, "ann/proj") == budget(ann, config)
    assert budget(ann, config)[0] > 0 and budget(ann, config) != (0, 0)
    assert before[1] >= 2
