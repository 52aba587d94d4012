"""What a write share's grantee writes by plain SQL into the owner's session does not decide
what her memory holds (PostgreSQL): a strategy state's coverage or a summary he plants does
not refuse her /retry, and a speaker he keeps by position does not make her words another's.
A reader trusts only rows it or the session's owner wrote (p025's `writer`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import invoke, run
from grantees import sql_as
from pg import NOW, Team

from chatmem.errors import TurnNotReplaceable
from chatmem.store import Store

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

HERS = {"en": ["My name is Ann.", "I live in Hangzhou."], "zh": ["我叫安娜。", "我住在杭州。"]}


def buffered(team: Team, tmp_path: Path, language: str) -> tuple[str, str, Path, int]:
    """Ann's and bob's URLs, a config (scripted) and the id of ann's buffer session `proj`
    (her two turns: nothing derived from them), shared with bob for writing."""
    config = tmp_path / "config.toml"
    config.write_text('provider = "scripted"\n', encoding="utf-8")
    ann, bob = team.url("ann"), team.url("bob")
    for i, said in enumerate(HERS[language]):
        run(ann, "ask", "proj", said, *(("--strategy", "buffer", "--save") if i == 0 else ()),
            "--config", str(config), code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    (found,), = team.rows("SELECT id FROM sessions WHERE name = 'proj'")
    return ann, bob, config, int(found)


def replaceable(url: str, session_id: int) -> bool:
    with Store(url) as store:
        try:
            store.turns.replaceable_turn(session_id)
        except TurnNotReplaceable:
            return False
        return True


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_coverage_a_grantee_plants_does_not_refuse_her_retry(
        team: Team, tmp_path: Path, language: str) -> None:
    ann, bob, _, session_id = buffered(team, tmp_path, language)
    assert replaceable(ann, session_id)
    assert sql_as(bob, "INSERT INTO strategy_state (session_id, strategy, key, value)"
                       " VALUES (%s, 'buffer', '@covers_turn', '99')", [session_id]) == 1
    assert replaceable(ann, session_id)
    assert not replaceable(bob, session_id)  # his own row is his to read
    # Nor does a summary he inserts, covering her last message.
    (last,), = team.rows("SELECT max(id) FROM messages WHERE session_id = %s", [session_id])
    assert sql_as(bob, "INSERT INTO summaries (session_id, strategy, version, text,"
                       " last_message_id, created_at) VALUES (%s, 'buffer', 1, %s, %s, %s)",
                  [session_id, "用户叫马洛里。", last, NOW]) == 1
    # Nor does he delete his own row to leave hers looking whole (p030): it stays.
    assert sql_as(bob, "DELETE FROM strategy_state WHERE session_id = %s", [session_id]) == 0
    assert replaceable(ann, session_id)
    assert not replaceable(bob, session_id)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_speaker_a_grantee_keeps_by_position_does_not_make_her_words_his(
        team: Team, tmp_path: Path, language: str) -> None:
    ann, bob, _, session_id = buffered(team, tmp_path, language)
    ids = [i for i, in team.rows("SELECT id FROM messages WHERE session_id = %s AND"
                                  " role = 'user' ORDER BY id", [session_id])]
    assert sql_as(bob, "INSERT INTO strategy_state (session_id, strategy, key, value)"
                       " SELECT %s, '@speakers', position::text, '\"马洛里\"' FROM messages"
                       " WHERE session_id = %s AND role = 'user'",
                  [session_id, session_id]) == 2
    with Store(ann) as store:
        assert store.history.speakers(session_id, ids) == {}
        assert store.history.speakers_by_position(session_id) == {}
    with Store(bob) as store:
        assert store.history.speakers(session_id, ids) == dict.fromkeys(ids, "马洛里")
    # Nor does her copy of the session into a file, or her fork, keep them.
    copy = tmp_path / "mine.db"
    invoke("sessions", "copy", "--from", ann, "--to", str(copy), "proj", code=0)
    run(ann, "sessions", "fork", "proj", "分支", code=0)
    with Store(str(copy)) as store:
        copied = store.sessions.session("proj").id
        assert store.history.speakers_by_position(copied) == {}
    with Store(ann) as store:
        forked = store.sessions.session("分支").id
        assert store.history.speakers_by_position(forked) == {}
