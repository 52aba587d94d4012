"""What a write share's grantee takes out of the owner's history (p028): only the session's
last turn, as his /retry or a regenerate replaces it. By plain SQL he hid any message of hers
(`superseded`), and her next context, export and fork left it out; he deleted her images
and eval probes (or rewrote an image's bytes), for good. An older database upgrades to it
losing nothing, a message he hid before shown again, her own replaced ones kept hidden;
an older chatmem refuses it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from acting_providers import ActsWhile
from cli_runner import run
from grantees import INSUFFICIENT_PRIVILEGE, shared_session, sql_as
from pg import (
    NOW,
    OldHistory,
    PostgresServer,
    Team,
    add_messages,
    migrated_before,
    older_chatmem_refuses,
)
from registered import open_session

from chatmem.config.settings import Settings
from chatmem.engine.resend import resend_last
from chatmem.errors import StoreError, StoreFailure
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store, TurnStatus

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

P028 = "p028_grantee_replaces_only_the_last_turn"
SAID = ["My name is Ann.", "我住在杭州。", "I like tea."]
ADD_IMAGE = ("INSERT INTO images (session_id, digest, mime, width, height, data, created_at)"
             " VALUES (%s, 'ab12', 'image/png', 1, 1, '\\x89504e47', %s)")
ADD_PROBE = ("INSERT INTO probes (session_id, after_position, question)"
             " VALUES (%s, 2, '我住在哪里？')")
HIDE = "UPDATE messages SET superseded = 1 WHERE session_id = %s AND turn = %s"
REPLACED = "UPDATE turns SET superseded_by = 9 WHERE session_id = %s AND history_turn = %s"
KEPT = ("SELECT (SELECT count(*) FROM images), (SELECT count(*) FROM probes),"
        " (SELECT string_agg(encode(data, 'hex'), ',') FROM images)")


def sent(url: str, session: str) -> list[str]:
    """The history messages `url`'s role's next context of `session` sends."""
    shown = json.loads(run(url, "inspect", session, "--next", "我住在哪里？", "--json",
                           "--provider", "scripted", code=0).stdout)
    return [m["content"] for part in shown["context"]["parts"] if part["kind"] == "history"
            for m in part["messages"]]


def test_a_grantee_hides_none_of_the_owners_earlier_turns_nor_her_images(team: Team) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    for said in SAID:
        run(ann, "ask", "proj", said, "--strategy", "buffer", "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    (session_id,), = team.rows("SELECT id FROM sessions WHERE owner = 'ann'")
    before = sent(ann, "proj")
    assert "我住在杭州。" in before and len(before) == 6
    assert sql_as(ann, ADD_IMAGE, [session_id, NOW]) == 1
    assert sql_as(ann, ADD_PROBE, [session_id]) == 1
    kept = team.rows(KEPT)

    for turn in (1, 2):
        assert sql_as(bob, HIDE, [session_id, turn]) == INSUFFICIENT_PRIVILEGE
        assert sql_as(bob, REPLACED, [session_id, turn]) == INSUFFICIENT_PRIVILEGE
    for statement in ("DELETE FROM images", "DELETE FROM probes"):
        assert sql_as(bob, statement) == 0, statement
    for statement in ("UPDATE images SET data = '\\x00'",
                      "UPDATE probes SET question = '我住在深圳吗？'"):
        assert sql_as(bob, statement) == INSUFFICIENT_PRIVILEGE, statement
    assert team.rows(KEPT) == kept
    assert sent(ann, "proj") == before
    assert team.rows("SELECT count(*) FROM messages WHERE superseded = 1") == [(0,)]

    # His chatmem's /retry of the last turn (hers) and a regenerate still go in, and his
    # SQL hides that last turn as his /retry does.
    with Store(bob) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "ann/proj")
        assert resend_last(engine, "I like green tea.").status == TurnStatus.OK
        done = store.turns.last_completed_id(session_id)
        assert resend_last(engine, expected=done).status == TurnStatus.OK
    assert sent(ann, "proj") == [*before[:4], "bob: I like green tea.",  # his words
                                 "echo #2: bob: I like green tea."]
    assert sql_as(bob, HIDE, [session_id, 3]) == 6  # two replaced attempts and the last
    assert sql_as(bob, HIDE, [session_id, 2]) == INSUFFICIENT_PRIVILEGE
    # Her own rows are hers to change.
    assert sql_as(ann, HIDE, [session_id, 1]) == 2
    assert sql_as(ann, "DELETE FROM probes") == 1


HISTORY = ("SELECT m.turn, m.content, m.superseded FROM messages m"
           " WHERE m.session_id = %s ORDER BY m.position")


@pytest.mark.parametrize("shown_at_once", [False, True])
@pytest.mark.parametrize("said", [("I like tea.", "I like green tea."),
                                  ("我喜欢茶。", "我喜欢绿茶。")])
def test_the_owners_turn_under_way_keeps_the_turn_he_hid_and_showed(
        team: Team, said: tuple[str, str], shown_at_once: bool) -> None:
    """His SQL hid her last turn while her reply came (no erasure counted: a /retry of his
    would have), then showed it again. Her turn took the hidden turn's number, and once
    shown her history held two turns 2 (her context, forks and `--at-turn` read it so).
    Now her turn is refused as after an erasure (nothing of it stored, her history as it
    was), or stored after it when he showed it again before her turn was stored."""
    ann, bob = team.url("ann"), team.url("bob")
    first, second = said
    for text in ("My name is Ann.", first):
        run(ann, "ask", "proj", text, "--strategy", "buffer", "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    (session_id,), = team.rows("SELECT id FROM sessions WHERE owner = 'ann'")
    history = team.rows(HISTORY, [session_id])

    def hide() -> None:
        assert sql_as(bob, HIDE, [session_id, 2]) == 2
        if shown_at_once:
            assert sql_as(bob, HIDE.replace("= 1", "= 0"), [session_id, 2]) == 2

    with Store(ann) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "proj")
        engine.provider = ActsWhile("stream", hide)
        if shown_at_once:
            assert engine.run_turn(second).record.history_turn == 3
        else:
            with pytest.raises(StoreError) as refused:
                engine.run_turn(second)
            assert refused.value.kind is StoreFailure.ERASED_MEANWHILE
            assert "send it again" in str(refused.value)
            assert sql_as(bob, HIDE.replace("= 1", "= 0"), [session_id, 2]) == 2
            assert team.rows(HISTORY, [session_id]) == history
            # Sent again, it goes in after her turn 2.
            assert engine.run_turn(second).record.history_turn == 3
    assert team.rows(HISTORY, [session_id]) == [
        *history, (3, second, 0), (3, f"echo #{1 if shown_at_once else 2}: {second}", 0)]
    assert team.rows("SELECT history_turn FROM turns WHERE session_id = %s AND status = 'ok'"
                     " ORDER BY number", [session_id]) == [(1,), (2,), (3,)]
    # Her own /retry of it still replaces it.
    with Store(ann) as store:
        engine = open_session(store, Settings(), ScriptedProvider(), "proj")
        assert resend_last(engine, first).record.history_turn == 3
    assert sent(ann, "proj")[-2:] == [first, f"echo #1: {first}"]


@pytest.fixture
def before_p028(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, P028) as old:
        yield old


def test_an_older_database_upgrades_showing_what_he_hid(before_p028: OldHistory,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from chatmem.store.postgres_backend import PostgresBackend

    old = before_p028
    ann, bob = old.url("ann"), old.url("bob")
    session_id = shared_session(ann, "buffer")
    add_messages(ann, session_id, [*SAID, "好的。", "记下了。", "收到。"])
    # Her own /retry of turn 3 (hidden, its replacement live at the same number), then a
    # turn 4 whose retry a crash left hidden at the end.
    with psycopg.connect(ann, autocommit=True) as conn:
        for position, turn, role, text, superseded in (
                (7, 3, "user", "记下了！", 0), (8, 3, "assistant", "收到！", 0),
                (9, 4, "user", "我喝绿茶。", 1), (10, 4, "assistant", "好。", 1)):
            conn.execute("INSERT INTO messages (session_id, position, turn, role, content,"
                         " created_at, superseded) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                         [session_id, position, turn, role, text, NOW, superseded])
    assert sql_as(ann, "UPDATE messages SET superseded = 1 WHERE session_id = %s"
                       " AND position IN (5, 6)", [session_id]) == 2
    assert sql_as(ann, ADD_IMAGE, [session_id, NOW]) == 1
    assert sql_as(ann, ADD_PROBE, [session_id]) == 1
    # Before p028 he could hide any turn of hers: all of turn 1, the reply of turn 2.
    assert sql_as(bob, HIDE, [session_id, 1]) == 2
    assert sql_as(bob, HIDE + " AND role = 'assistant'", [session_id, 2]) == 1
    rows = "SELECT position, turn, role, content, owner FROM messages ORDER BY 1"
    with old.server.admin(old.database) as conn:
        stored = conn.execute(rows).fetchall(), conn.execute(KEPT).fetchall()

    PostgresBackend(old.url(old.keeper)).close()

    with old.server.admin(old.database) as conn:
        assert (conn.execute(rows).fetchall(), conn.execute(KEPT).fetchall()) == stored
        assert conn.execute("SELECT position FROM messages WHERE superseded = 1"
                            " ORDER BY 1").fetchall() == [(5,), (6,), (9,), (10,)]
    with Store(ann) as store:
        assert [m.content for m in store.history.messages(session_id)] == [
            *SAID, "好的。", "记下了！", "收到！"]
    assert sql_as(bob, HIDE, [session_id, 2]) == INSUFFICIENT_PRIVILEGE
    assert sql_as(bob, HIDE.replace("= 1", "= 0"), [session_id, 3]) == INSUFFICIENT_PRIVILEGE
    assert sql_as(bob, HIDE.replace("= 1", "= 0"), [session_id, 4]) == 2
    assert sql_as(bob, "DELETE FROM images") == sql_as(bob, "DELETE FROM probes") == 0
    # An older chatmem (one that knows no p028) refuses the upgraded database.
    older_chatmem_refuses(ann, P028, monkeypatch)
