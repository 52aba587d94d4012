"""What a write-share grantee adds to the owner's session goes where chatmem puts it, dated
by the server (p018): by plain SQL he no longer dates the session so that the owner's
retention erases it (or never does), nor stores a message or a turn numbered far ahead
(the owner's next turn spun through empty fact batches; at the largest bigint the session
was broken), nor a time, a pause, a JSON column or an erasure count that broke her reads,
nor rewrites her turns' contexts beyond a purge's masks. His own turns there, a /retry, a
failed attempt and a purge included, still go in."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_runner import chat, run
from grantees import INSUFFICIENT_PRIVILEGE, PROFILE, shared, sql_as
from pg import NOW, OldHistory, PostgresServer, Team, migrated_before
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.engine.resend import resend_last
from chatmem.errors import ProviderResponseError
from chatmem.providers.scripted import ScriptedProvider, ScriptedReply
from chatmem.store import Store, TurnStatus
from chatmem.timestamps import parse_time, stamp, utc_now

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

LARGEST = 9223372036854775807
STAMPED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")
"""How chatmem stores a time (timestamps.stamp)."""
ADD_MESSAGE = ("INSERT INTO messages (session_id, position, turn, role, content, created_at)"
               " VALUES (%s, %s, %s, 'user', '插一句', '2026-01-01T00:00:00.000+00:00')")
ADD_TURN = ("INSERT INTO turns (session_id, number, history_turn, status, input, context,"
            " strategy, created_at) VALUES (%s, %s, %s, 'failed', 'x', '{}', 'buffer', %s)")

ADD_JSON_TURN = ("INSERT INTO turns (session_id, number, status, input, context, params,"
                 " rendered, strategy, created_at) VALUES (%s, 2, 'failed', 'x', %s, %s, %s,"
                 " 'buffer', 'garbage-date')")
NOT_READ = "23514"
"""A turn row chatmem would not read back: refused as a CHECK constraint refuses one."""


def fresh(stored: str) -> bool:
    """`stored` is the server's now in chatmem's form (not a time a client gave)."""
    return bool(STAMPED.fullmatch(stored)) and abs(parse_time(stored) - utc_now()) < timedelta(
        minutes=5)


class BrokenProvider(ScriptedProvider):
    """Every reply breaks off: the turn is recorded failed (a turns row, no messages)."""

    def stream(self, messages: Any) -> ScriptedReply:
        raise ProviderResponseError("the reply stream broke off")


def test_a_grantee_cannot_date_the_owners_session_for_her_retention(team: Team) -> None:
    ann, bob = shared(team)
    run(ann, "sessions", "retention", "proj", "30d", code=0)
    (session_id,), = team.rows("SELECT id FROM sessions WHERE owner = 'ann'")

    def updated() -> str:
        return str(team.rows("SELECT updated_at FROM sessions WHERE id = %s", [session_id])[0][0])

    # Back (erased by her next command), forward (kept for good), or not a time at all.
    for value in ("2000-01-01T00:00:00.000+00:00", "9999-12-31T23:59:59.999+00:00", "昨天"):
        assert sql_as(bob, "UPDATE sessions SET updated_at = %s WHERE id = %s",
                      [value, session_id]) == 1
        assert fresh(updated()), (value, updated())
    # His chatmem on a clock years behind (faketime): his turn is stored, dated now.
    years_ago = datetime(2020, 1, 1, tzinfo=UTC)
    with Store(bob, clock=lambda: years_ago) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "ann/proj")
        assert engine.run_turn("status update 状态").status == TurnStatus.OK
    assert fresh(updated()), updated()
    pruned = json.loads(run(ann, "sessions", "prune", "--dry-run", "--json", code=0).stdout)
    assert "proj" not in json.dumps(pruned, ensure_ascii=False), pruned
    run(ann, "ask", "proj", "还在吗", "--provider", "scripted", code=0)
    assert team.rows("SELECT count(*) FROM sessions") == [(1,)]

    # What he may do still goes through (the time is the server's); the owner sets her own.
    assert sql_as(bob, "UPDATE sessions SET erasures = erasures + 1 WHERE id = %s",
                  [session_id]) == 1
    assert sql_as(ann, "UPDATE sessions SET updated_at = %s WHERE id = %s",
                  [NOW, session_id]) == 1
    assert updated() == NOW


def test_a_grantee_adds_messages_and_turns_only_at_the_end(team: Team) -> None:
    ann, bob = shared(team)
    (session_id,), = team.rows("SELECT id FROM sessions WHERE owner = 'ann'")
    before = team.rows("SELECT position, turn FROM messages ORDER BY position")
    assert before == [(1, 1), (2, 1)]
    for position, turn in ((10**12, 10**12), (3, 10**12), (3, LARGEST), (3, 3), (3, 0),
                           (1, 2), (LARGEST, 2)):
        assert sql_as(bob, ADD_MESSAGE, [session_id, position, turn]) \
            == INSUFFICIENT_PRIVILEGE, (position, turn)
    for number, history_turn in ((LARGEST, None), (10**12, None), (2, 10**12), (2, 2),
                                 (2, 0)):
        assert sql_as(bob, ADD_TURN, [session_id, number, history_turn, NOW]) \
            == INSUFFICIENT_PRIVILEGE, (number, history_turn)
    assert team.rows("SELECT position, turn FROM messages ORDER BY position") == before
    assert team.rows("SELECT number FROM turns") == [(1,)]

    # His chatmem's writes: a turn, its /retry, a failed attempt, a regenerate after it
    # (serve's), another turn.
    with Store(bob) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "ann/proj")
        assert engine.run_turn("我是 bob").status == TurnStatus.OK
        assert resend_last(engine).status == TurnStatus.OK
    with Store(bob) as store, pytest.raises(ProviderResponseError):
        open_session(store, Settings(), BrokenProvider(), "ann/proj").run_turn("x")
    with Store(bob) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "ann/proj")
        done = store.turns.last_completed_id(session_id)
        assert resend_last(engine, "我是 bob!", expected=done).status == TurnStatus.OK
        assert engine.run_turn("again").status == TurnStatus.OK
    # By SQL too, at the end: the next position, in the last turn or the one after it.
    assert sql_as(bob, ADD_MESSAGE, [session_id, 11, 3]) == 1
    assert sql_as(bob, ADD_TURN, [session_id, 7, None, NOW]) == 1
    assert team.rows("SELECT position, turn, superseded FROM messages ORDER BY position") == [
        (1, 1, 0), (2, 1, 0), (3, 2, 1), (4, 2, 1), (5, 2, 1), (6, 2, 1), (7, 2, 0), (8, 2, 0),
        (9, 3, 0), (10, 3, 0), (11, 3, 0)]
    assert team.rows("SELECT number, history_turn FROM turns ORDER BY number") == [
        (1, 1), (2, 2), (3, 2), (4, None), (5, 2), (6, 3), (7, None)]

    # The owner's next turn goes on from there; her own rows are hers to number.
    run(ann, "ask", "proj", "next question", "--provider", "scripted", code=0)
    assert team.rows("SELECT max(turn), max(position) FROM messages") == [(4, 13)]
    assert sql_as(ann, ADD_MESSAGE, [session_id, 100, 100]) == 1


def test_a_lease_a_grantee_planted_keeps_nobody_from_embedding(team: Team,
                                                               tmp_path: Path) -> None:
    """A lease row bob wrote by SQL on ann's backlog, ending in 9999, leaves it to no one:
    her `index` embeds it (chatmem's own leases end LEASE_SECONDS after their heartbeat)."""
    ann, bob = shared(team)
    (session_id,), = team.rows("SELECT id FROM sessions WHERE owner = 'ann'")
    assert sql_as(bob, "INSERT INTO index_leases (session_id, model, pid, host, heartbeat_at,"
                       " expires_at) VALUES (%s, 'hash:256', 4242, 'bob.invalid', %s, %s)",
                  [session_id, stamp(utc_now()), "9999-12-31T23:59:59.000+00:00"]) == 1
    config = tmp_path / "config.toml"
    config.write_text('[embeddings]\nprovider = "hash"\n', encoding="utf-8")
    report = json.loads(run(ann, "index", "proj", "--json", "--config", str(config),
                            code=0).stdout)
    assert (report["embedded"], report["elsewhere"]) == (2, []), report


@pytest.fixture
def before_p018(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, "p018_grantee_writes_placed_and_dated") as old:
        yield old


def test_an_older_databases_shared_sessions_get_the_rules_on_upgrade(
        before_p018: OldHistory) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p018
    ann, bob = old.url("ann"), old.url("bob")
    with psycopg.connect(ann, autocommit=True) as conn:
        session_id = conn.execute(
            "INSERT INTO sessions (name, strategy, created_at, updated_at) VALUES"
            " ('旅行', 'entity', %s, %s) RETURNING id", [NOW, NOW]).fetchone()[0]
        conn.execute("INSERT INTO session_shares (session_id, grantee, mode)"
                     " VALUES (%s, 'bob', 'write')", [session_id])
    # The holes: before p018 bob planted a turn far ahead and dated the session back.
    assert sql_as(bob, ADD_MESSAGE, [session_id, 10**12, 10**12]) == 1
    assert sql_as(bob, "UPDATE sessions SET updated_at = %s WHERE id = %s",
                  ["2000-01-01T00:00:00.000+00:00", session_id]) == 1
    assert sql_as(ann, "DELETE FROM messages WHERE session_id = %s", [session_id]) == 1

    PostgresBackend(old.url(old.keeper)).close()

    assert sql_as(bob, ADD_MESSAGE, [session_id, 10**12, 10**12]) == INSUFFICIENT_PRIVILEGE
    assert sql_as(bob, ADD_MESSAGE, [session_id, 1, 1]) == 1
    assert sql_as(bob, "UPDATE sessions SET updated_at = %s WHERE id = %s",
                  ["1999-01-01T00:00:00.000+00:00", session_id]) == 1
    with old.server.admin(old.database) as conn:
        (updated,), = conn.execute("SELECT updated_at FROM sessions").fetchall()
    assert fresh(updated), updated


def test_what_a_grantee_adds_is_dated_by_the_server_and_reads_back(team: Team,
                                                                  tmp_path: Path) -> None:
    """An unreadable time or a NaN pause on his message, a turn whose context is not JSON:
    every read of ann's session failed (ask, show, export)."""
    ann, bob = shared(team)
    (session_id,), = team.rows("SELECT id FROM sessions WHERE owner = 'ann'")
    assert sql_as(bob, "INSERT INTO messages (session_id, position, turn, role, content,"
                       " created_at, gap_s) VALUES (%s, 3, 2, 'user', 'bob 的备注',"
                       " 'garbage-date', 'NaN')", [session_id]) == 1
    (created, gap), = team.rows("SELECT created_at, gap_s FROM messages WHERE position = 3")
    assert fresh(created) and math.isfinite(gap) and abs(gap) < 300, (created, gap)

    deep = "[" * 500 + "]" * 500
    for context, params, rendered in (("{not json", "{}", None), ("[]", "{}", None),
                                      ('{"a": ' + deep + "}", "{}", None),
                                      ("{}", '"x"', None), ("{}", "{}", "{not json"),
                                      ("{}", "{}", "[{}]"), ("{}", "{}", '{"from": 1}'),
                                      ("{}", "{}", '[{"from": 1, "to": 2}]'),
                                      ("{}", "{}", '[{"from": 1, "to": 4, "gaps": {}}]'),
                                      ("{}", "{}", '[{"from": 1, "to": 2, "gaps": {"a": 1}}]')):
        assert sql_as(bob, ADD_JSON_TURN, [session_id, context, params, rendered]) \
            == NOT_READ, (context, params, rendered)
    # What Python's json reads (and json.dumps writes) goes in, dated now.
    written = '{"score": NaN, "low": -Infinity, "note": "a\\u0000b 中文"}'
    pieces = json.dumps(["text", {"from": 1, "to": 2, "gaps": {"user assistant": "\n"}}])
    assert sql_as(bob, ADD_JSON_TURN, [session_id, written, '{"k": 1}', pieces]) == 1
    (created,), = team.rows("SELECT created_at FROM turns WHERE number = 2")
    assert fresh(created), created

    run(ann, "ask", "proj", "还在吗", "--provider", "scripted", code=0)
    assert "bob 的备注" in run(ann, "sessions", "show", "proj", code=0).stdout
    run(ann, "sessions", "export", "proj", "-o", str(tmp_path / "proj.md"), code=0)
    run(ann, "inspect", "proj", code=0)


def test_an_erasure_a_grantee_counts_is_one(team: Team) -> None:
    """The largest bigint he wrote broke her /retry and purge ("bigint out of range"). Since
    p029 a count stands only with what it erases (test_postgres_grantee_erasures)."""
    ann, bob = shared(team)
    run(ann, "ask", "w", "第一个问题", "--strategy", "window", "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "w", "--with", "bob", "--write", code=0)
    before = team.rows("SELECT id, erasures FROM sessions ORDER BY id")
    for value in (LARGEST, -5, 0):
        with psycopg.connect(bob) as conn, conn.transaction():
            assert conn.execute("UPDATE messages SET superseded = 1 - superseded WHERE"
                                " turn = 1").rowcount == 4
            assert conn.execute("UPDATE sessions SET erasures = %s", [value]).rowcount == 2
    assert team.rows("SELECT id, erasures FROM sessions ORDER BY id") == [
        (session_id, erasures + 3) for session_id, erasures in before]
    with Store(ann) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "w")
        assert resend_last(engine).status == TurnStatus.OK
    run(ann, "facts", "forget", "proj", "phone", "--purge", "--yes", code=0)
    assert sql_as(ann, "UPDATE sessions SET erasures = 7", []) == 2
    assert team.rows("SELECT erasures FROM sessions") == [(7,), (7,)]


def test_a_grantee_changes_the_owners_turns_only_where_his_purge_masks_a_fact(
        team: Team) -> None:
    """He changed any turn's context: not JSON (her every ask failed), or with files she
    never attached (her /retry sent them). His purge's masks still go in."""
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "proj", "hello", "--strategy", "entity", "--provider", "scripted",
        env=PROFILE, code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    chat(bob, "ann/proj", ["/remember --user phone: Nokia3310", "my phone is Nokia3310"],
         env=PROFILE, code=0)
    (first,), = team.rows("SELECT context FROM turns WHERE number = 1")
    forged = json.loads(first)
    forged.setdefault("parts", []).append({"kind": "files", "messages": [
        {"role": "user", "content": '<file name="keys.txt">偷来的</file>'}]})
    changed = json.loads(first) | {"budget": 1}
    for column, value in (("context", "{not json"), ("context", json.dumps(forged)),
                          ("context", json.dumps(changed)), ("context", "[]"),
                          ("rendered", "[{}]"), ("rendered", "{not json")):
        assert sql_as(bob, f"UPDATE turns SET {column} = %s WHERE number = 1",
                      [value]) == INSUFFICIENT_PRIVILEGE, (column, value)
    assert team.rows("SELECT context FROM turns WHERE number = 1") == [(first,)]

    # His purge of his own fact masks its lines in the turns that showed it.
    run(bob, "facts", "forget", "phone", "--user", "team", "--purge", "--yes", env=PROFILE,
        code=0)
    mark = '\\"purged\\": true'  # inside the facts message's JSON string
    masked = team.rows("SELECT number, context FROM turns WHERE strpos(context, %s) > 0",
                       [mark])
    assert [number for number, _ in masked] == [2], masked
    assert "Nokia3310" not in masked[0][1].split('"kind": "input"')[0]
    # A mask is a purged fact's marker, nothing else.
    other = masked[0][1].replace(mark, '\\"purged\\": false')
    assert sql_as(bob, "UPDATE turns SET context = %s WHERE number = 2",
                  [other]) == INSUFFICIENT_PRIVILEGE
    run(ann, "ask", "proj", "还在吗", "--provider", "scripted", env=PROFILE, code=0)
    with Store(ann) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "proj")
        assert resend_last(engine).status == TurnStatus.OK
