"""What a write-share grantee may still change of the owner's turns and facts (p020): by
plain SQL he no longer rewrites the prompt her `inspect` shows she sent (`rendered`, valid
turn JSON of his own making, or `rendered_prompt`), only masks it where his purge erases a
fact; and the facts he writes into her session are dated by the server, not by him (a time
chatmem cannot read broke every read of her facts). His own chatmem's purge, /remember and
forget there still go in."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
from acting_providers import RenderingProvider
from cli_runner import chat, run
from grantees import INSUFFICIENT_PRIVILEGE, PROFILE, sql_as
from pg import NOW, OldHistory, PostgresServer, Team, migrated_before
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.memory.facts import purged_line
from chatmem.privacy.mentions import MARKER
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import FactScope, Store, TurnStatus
from chatmem.store.postgres_masked_prompts import MARKS
from chatmem.timestamps import parse_time, utc_now

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

STAMPED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")
ADD_FACT = ("INSERT INTO facts (scope, session_id, key, value, created_at, updated_at,"
            " deleted_at, used_at) VALUES ('session', %s, %s, '蓝色', %s, %s, %s, %s)")


def fresh(stored: str) -> bool:
    """`stored` is the server's now in chatmem's form (not a time a client gave)."""
    return bool(STAMPED.fullmatch(stored)) and abs(parse_time(stored) - utc_now()) < timedelta(
        minutes=5)


def rendered_turn(team: Team) -> tuple[str, str]:
    """Ann's `proj`, shared with bob for writing, where bob took turn 2 on a local model
    with his profile fact `phone: Nokia3310` in its context: (ann's, bob's) URLs."""
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "proj", "hello 你好", "--strategy", "entity", "--provider", "scripted",
        env=PROFILE, code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    with Store(bob) as store:
        store.facts.upsert_fact("phone", "Nokia3310", scope=FactScope.USER, user="team")
        engine = open_session(store, Settings(), RenderingProvider(), "ann/proj")
        assert engine.run_turn("我的手机是 Nokia3310").status == TurnStatus.OK
    (pieces,), = team.rows("SELECT rendered FROM turns WHERE number = 2")
    assert pieces is not None and "Nokia3310" in pieces
    return ann, bob


def shown(ann: str) -> str:
    """The rendered prompt of turn 2 as ann's `inspect --json` shows it."""
    return str(json.loads(run(ann, "inspect", "proj", "--request", "2", "--json",
                              code=0).stdout)["rendered_prompt"])


def test_the_markers_are_the_ones_a_purge_writes() -> None:
    for marker in (MARKER, purged_line(7), purged_line(9007199254740991)):
        assert re.fullmatch(MARKS, marker), marker


def test_a_grantee_cannot_rewrite_the_prompt_the_owners_inspect_shows(team: Team) -> None:
    ann, bob = rendered_turn(team)
    before = team.rows("SELECT rendered_prompt, rendered FROM turns WHERE number = 2")
    text = shown(ann)
    pieces = json.loads(before[0][1])
    first = next(i for i, p in enumerate(pieces) if isinstance(p, str) and "Nokia3310" in p)

    def with_piece(value: str) -> str:
        return json.dumps([*pieces[:first], value, *pieces[first + 1:]], ensure_ascii=False)

    forged = pieces[first].replace("Nokia3310", "iPhone 99")
    for rendered_prompt, rendered in (
            (None, with_piece(forged)),  # valid turn JSON, another text
            (None, json.dumps(["我从没说过这句话"], ensure_ascii=False)),
            (None, json.dumps(list(reversed(pieces)), ensure_ascii=False)),
            ("forged whole", None), ("forged whole", before[0][1]),  # hidden behind pieces
            (text + "extra", None),
            (None, with_piece(pieces[first].replace("Nokia3310", "[forgotten] iPhone"))),
            (None, with_piece("[forgotten]" + pieces[first] + "!")),
            (None, None), (None, "[]")):
        assert sql_as(bob, "UPDATE turns SET rendered_prompt = %s, rendered = %s"
                           " WHERE number = 2", [rendered_prompt, rendered]) \
            == INSUFFICIENT_PRIVILEGE, (rendered_prompt, rendered)
    assert team.rows("SELECT rendered_prompt, rendered FROM turns WHERE number = 2") == before
    assert shown(ann) == text

    # Masking is what he may do, by SQL as by chatmem: pieces or the whole text.
    masked = text.replace("Nokia3310", "[forgotten]")
    assert sql_as(bob, "UPDATE turns SET rendered_prompt = %s, rendered = NULL"
                       " WHERE number = 2", [masked]) == 1
    assert shown(ann) == masked
    # ... never back to what was erased.
    assert sql_as(bob, "UPDATE turns SET rendered_prompt = %s WHERE number = 2",
                  [text]) == INSUFFICIENT_PRIVILEGE
    # The owner's own turn is hers to rewrite.
    assert sql_as(ann, "UPDATE turns SET rendered_prompt = 'hers' WHERE number = 2") == 1


def test_a_grantees_purge_still_masks_his_fact_in_the_rendered_prompt(team: Team) -> None:
    ann, bob = rendered_turn(team)
    text = shown(ann)
    assert "Nokia3310" in text
    run(bob, "facts", "forget", "phone", "--user", "team", "--purge", "--yes", env=PROFILE,
        code=0)
    now = shown(ann)
    assert "Nokia3310" not in now.split("我的手机是")[0]
    assert '"purged": true' in now and now != text
    # After the purge the marked prompt is what he may mask further, not undo.
    (pieces,), = team.rows("SELECT rendered FROM turns WHERE number = 2")
    mark = '\\"purged\\": true'  # inside a JSON string
    assert mark in pieces
    assert sql_as(bob, "UPDATE turns SET rendered = %s WHERE number = 2",
                  [pieces.replace(mark, '\\"purged\\": false')]) \
        == INSUFFICIENT_PRIVILEGE
    with Store(ann) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "proj")
        assert engine.run_turn("还在吗").status == TurnStatus.OK


def test_the_times_of_facts_a_grantee_writes_are_the_servers(team: Team) -> None:
    ann, bob = rendered_turn(team)
    (session_id,), = team.rows("SELECT id FROM sessions WHERE owner = 'ann'")
    for key, times in (("颜色", ("昨天", "garbage", None, None)),
                       ("colour", ("2000-01-01T00:00:00+00:00", "9999-12-31T23:59:59+00:00",
                                   "not-a-time", "9999-12-31T23:59:59+00:00"))):
        assert sql_as(bob, ADD_FACT, [session_id, key, *times]) == 1
    rows = team.rows("SELECT key, created_at, updated_at, deleted_at, used_at FROM facts"
                     " WHERE session_id = %s AND key IN ('颜色', 'colour') ORDER BY key",
                     [session_id])
    assert [r[0] for r in rows] == ["colour", "颜色"]
    assert all(fresh(created) and fresh(updated) for _, created, updated, *_ in rows), rows
    assert fresh(rows[0][3]) and fresh(rows[0][4]) and rows[1][3:] == (None, None), rows

    (created,), = team.rows("SELECT created_at FROM facts WHERE key = '颜色'")
    for column, value in (("updated_at", "9999-12-31T23:59:59+00:00"), ("used_at", "乱码"),
                          ("deleted_at", "2000-01-01T00:00:00+00:00"),
                          ("created_at", "1970-01-01T00:00:00+00:00")):
        assert sql_as(bob, f"UPDATE facts SET {column} = %s WHERE key = '颜色'",
                      [value]) == 1
    (c, u, d, used), = team.rows("SELECT created_at, updated_at, deleted_at, used_at FROM facts"
                                 " WHERE key = '颜色'")
    assert c == created and fresh(u) and fresh(d) and fresh(used), (c, u, d, used)
    run(ann, "facts", "list", "proj", code=0)

    # His chatmem's /remember and forget there still go in; ann's own times are hers.
    chat(bob, "ann/proj", ["/remember 城市: 上海"], env=PROFILE, code=0)
    (updated,), = team.rows("SELECT updated_at FROM facts WHERE key = '城市'")
    assert fresh(updated)
    run(bob, "facts", "forget", "ann/proj", "城市", "--yes", env=PROFILE, code=0)
    assert team.rows("SELECT deleted_at IS NOT NULL FROM facts WHERE key = '城市'") == [(True,)]
    assert sql_as(ann, ADD_FACT, [session_id, "hers", NOW, NOW, None, None]) == 1
    assert team.rows("SELECT created_at FROM facts WHERE key = 'hers'") == [(NOW,)]


@pytest.fixture
def before_p020(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, "p020_grantee_masks_rendered_prompts_and_facts_dated") as old:
        yield old


def test_an_older_databases_shared_turns_and_facts_get_the_rules_on_upgrade(
        before_p020: OldHistory) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p020
    ann, bob = old.url("ann"), old.url("bob")
    with psycopg.connect(ann, autocommit=True) as conn:
        session_id = conn.execute(
            "INSERT INTO sessions (name, strategy, created_at, updated_at) VALUES"
            " ('旅行', 'entity', %s, %s) RETURNING id", [NOW, NOW]).fetchone()[0]
        conn.execute("INSERT INTO turns (session_id, number, status, input, context,"
                     " strategy, rendered_prompt, created_at) VALUES (%s, 1, 'failed', 'x',"
                     " '{}', 'buffer', 'what ann sent', %s)", [session_id, NOW])
        conn.execute("INSERT INTO session_shares (session_id, grantee, mode)"
                     " VALUES (%s, 'bob', 'write')", [session_id])
    # The holes: before p020 bob rewrote her prompt and dated a fact as he liked.
    assert sql_as(bob, "UPDATE turns SET rendered_prompt = 'forged'") == 1
    assert sql_as(bob, ADD_FACT, [session_id, "k", "garbage", "garbage", None, None]) == 1

    PostgresBackend(old.url(old.keeper)).close()

    assert sql_as(bob, "UPDATE turns SET rendered_prompt = 'forged again'") \
        == INSUFFICIENT_PRIVILEGE
    assert sql_as(bob, "UPDATE turns SET rendered_prompt = '[forgotten]'") == 1
    assert sql_as(bob, ADD_FACT, [session_id, "k2", "garbage", "garbage", None, None]) == 1
    with old.server.admin(old.database) as conn:
        (created,), = conn.execute("SELECT created_at FROM facts WHERE key = 'k2'").fetchall()
    assert fresh(created), created
