"""Nobody reads another's memory: row-level security under two roles on one database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pg import NOW, PostgresServer, add_message, add_session, count

from chatmem.errors import StoreError, StoreFailure
from chatmem.store.postgres_backend import PostgresBackend
from chatmem.store.postgres_policies import USER_TABLES

# -- row ownership -----------------------------------------------------------------------


def fill(b: PostgresBackend, name: str) -> int:
    """A session with a row in every table of user data; returns the session's id."""
    session_id = add_session(b, name)
    message_id = add_message(b, session_id, 0, f"{name}: 我们五月去杭州旅行")
    with b.write():
        b.execute("INSERT INTO token_counts VALUES (?, 'o200k', 9)", [message_id])
        b.execute("INSERT INTO message_vectors VALUES (?, 'e5', 1, ?, ?)",
                  [message_id, b"\x01", b"\x02"])
        b.execute("INSERT INTO turns (session_id, number, status, input, context, strategy,"
                  " created_at) VALUES (?, 1, 'ok', 'hi', '{}', 'window', ?)", [session_id, NOW])
        b.execute("INSERT INTO summaries (session_id, strategy, version, text, created_at)"
                  " VALUES (?, 'summary', 1, 'sum', ?)", [session_id, NOW])
        fact_id = b.execute(
            "INSERT INTO facts (scope, \"user\", session_id, key, value, created_at, updated_at)"
            " VALUES ('session', NULL, ?, 'city', '杭州', ?, ?) RETURNING id",
            [session_id, NOW, NOW]).fetchone()[0]
        b.execute("INSERT INTO facts (scope, \"user\", key, value, created_at, updated_at)"
                  " VALUES ('user', ?, 'name', ?, ?, ?)", [name, name, NOW, NOW])
        b.execute("INSERT INTO fact_history (fact_id, key, value, stated_at, replaced_at)"
                  " VALUES (?, 'city', 'Paris', ?, ?)", [fact_id, NOW, NOW])
        b.execute("INSERT INTO strategy_state VALUES (?, 'summary', 'k', 'v')", [session_id])
        b.execute("INSERT INTO session_prompts VALUES (?, 1, 'be brief')", [session_id])
        b.execute("INSERT INTO probes (session_id, after_position, question) VALUES (?, 0, ?)",
                  [session_id, "where?"])
    return session_id


def visible(b: PostgresBackend) -> dict[str, int]:
    return {table: count(b, table) for table in USER_TABLES}


@pytest.fixture
def ann_and_bob(pg_url: str, pg_server: PostgresServer
                ) -> Iterator[tuple[PostgresBackend, PostgresBackend]]:
    database = pg_url.split("/")[3].split("?")[0]
    with PostgresBackend(pg_server.url(database, "ann")) as ann, \
            PostgresBackend(pg_server.url(database, "bob")) as bob:
        yield ann, bob


def test_a_role_sees_and_touches_none_of_anothers_rows(
        ann_and_bob: tuple[PostgresBackend, PostgresBackend]) -> None:
    ann, bob = ann_and_bob
    fill(ann, "work")
    own = visible(ann)
    assert all(own[t] >= 1 for t in USER_TABLES if t != "session_shares")
    assert visible(bob) == dict.fromkeys(USER_TABLES, 0)
    assert bob.word_scores(["杭州"], None, None, 10) == []
    assert bob.count_words_matches(["杭州"], 10)[0] == 0
    with bob.write():
        for table in USER_TABLES:
            # The first column a role may update (ids, owners and sessions none may: p007).
            column = bob.execute("SELECT c.column_name FROM information_schema.columns c"
                                 " JOIN information_schema.column_privileges p ON"
                                 " p.table_name = c.table_name AND p.column_name ="
                                 " c.column_name WHERE c.table_name = ? AND p.grantee ="
                                 " 'PUBLIC' AND p.privilege_type = 'UPDATE' ORDER BY"
                                 " c.ordinal_position LIMIT 1", [table]).fetchone()[0]
            assert bob.execute(f"UPDATE {table} SET {column} = {column}").rowcount == 0
            assert bob.execute(f"DELETE FROM {table}").rowcount == 0
    assert visible(ann) == own
    # Names are unique per owner: both may call a session "work".
    fill(bob, "work")
    assert [r[0] for r in bob.execute("SELECT name FROM sessions")] == ["work"]
    assert visible(ann) == own


def test_a_shared_session_is_the_one_exception(
        ann_and_bob: tuple[PostgresBackend, PostgresBackend]) -> None:
    ann, bob = ann_and_bob
    shared, private = fill(ann, "shared"), fill(ann, "private")
    with ann.write():
        ann.execute("INSERT INTO session_shares (session_id, grantee, mode) VALUES (?, 'bob',"
                    " 'read')", [shared])
    assert [r[0] for r in bob.execute("SELECT id FROM sessions")] == [shared]
    assert {r[0] for r in bob.execute("SELECT session_id FROM messages")} == {shared}
    assert [r[0] for r in bob.execute("SELECT key FROM facts")] == ["city"]  # not ann's user fact
    assert [m for m, _, _ in bob.word_scores(["杭州"], None, None, 10)] == [
        r[0] for r in ann.execute("SELECT id FROM messages WHERE session_id = ?", [shared])]
    # Read-only: bob can neither add to it nor change it.
    with pytest.raises(StoreError) as e:
        add_message(bob, shared, 1, "bob was here")
    assert e.value.kind is StoreFailure.NOT_PERMITTED
    # A change of a read-only row is refused aloud, not skipped as if it were made (p007).
    with pytest.raises(StoreError) as e, bob.write():
        bob.execute("UPDATE messages SET content = 'x'")
    assert e.value.kind is StoreFailure.NOT_PERMITTED
    assert {r[0] for r in ann.execute("SELECT content FROM messages")} == {
        "shared: 我们五月去杭州旅行", "private: 我们五月去杭州旅行"}
    # Bob cannot share ann's sessions with himself.
    with pytest.raises(StoreError), bob.write():
        bob.execute("INSERT INTO session_shares (session_id, grantee, mode) VALUES (?, 'bob',"
                    " 'write')", [private])
    # Shared for writing, bob adds a turn; ann sees it, bob still cannot delete the session.
    with ann.write():
        ann.execute("UPDATE session_shares SET mode = 'write' WHERE session_id = ?", [shared])
    add_message(bob, shared, 1, "bob was here")  # at the end (p018)
    assert ann.count_words_matches(["bob"], 10)[0] == 1
    with bob.write():
        assert bob.execute("DELETE FROM sessions").rowcount == 0
    # Nor take it over: the owner column is not his to change, in any table.
    for table in USER_TABLES:
        with pytest.raises(StoreError) as e, bob.write():
            bob.execute(f"UPDATE {table} SET owner = 'bob'")
        assert e.value.kind is StoreFailure.NOT_PERMITTED, table
    assert {r[0] for r in ann.execute("SELECT owner FROM sessions")} == {"ann"}
    # Unshared, the session is ann's alone again.
    with ann.write():
        ann.execute("DELETE FROM session_shares")
    # Issue 28: what bob wrote under the share went with it, out of his reach (p001 left
    # him his own rows there, to read, change and delete).
    assert count(bob, "sessions") == 0
    with bob.write():
        for table in USER_TABLES:
            assert count(bob, table) == 0, table
            assert bob.execute(f"DELETE FROM {table}").rowcount == 0, table
        assert bob.execute("UPDATE messages SET content = 'x'").rowcount == 0
    assert ann.execute("SELECT content FROM messages WHERE session_id = ? ORDER BY position",
                       [shared]).fetchall() == [("shared: 我们五月去杭州旅行",), ("bob was here",)]


def test_a_writer_of_a_shared_session_counts_what_left_its_memory(
        ann_and_bob: tuple[PostgresBackend, PostgresBackend]) -> None:
    """sessions.erasures (p008): a role that may write a session shared with it counts its
    purge or replaced turn there, for engines others keep open (only with what it erases:
    p029); one that only reads may not."""
    from chatmem.store import steps

    ann, bob = ann_and_bob
    shared = fill(ann, "shared")
    with ann.write():
        ann.execute("INSERT INTO session_shares (session_id, grantee, mode) VALUES (?, 'bob',"
                    " 'write')", [shared])
    with bob.write():
        # In the transaction that takes text out (here his SQL hides the last turn, as his
        # /retry does); one erasing nothing counts nothing (p029).
        bob.execute("UPDATE messages SET superseded = 1 WHERE session_id = ? AND turn ="
                    " (SELECT max(turn) FROM messages WHERE session_id = ?)", [shared, shared])
        steps.count_erasure(bob, [shared])
    with bob.write():
        steps.count_erasure(bob, [shared])
    assert ann.execute("SELECT erasures FROM sessions WHERE id = ?", [shared]).fetchone() == (1,)
    with ann.write():
        ann.execute("UPDATE session_shares SET mode = 'read' WHERE session_id = ?", [shared])
    with pytest.raises(StoreError) as e, bob.write():
        steps.count_erasure(bob, [shared])
    assert e.value.kind is StoreFailure.NOT_PERMITTED
    assert ann.execute("SELECT erasures FROM sessions WHERE id = ?", [shared]).fetchone() == (1,)
