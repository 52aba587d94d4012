"""A role's own temporary tables stand in for none of chatmem's (p009).

PostgreSQL resolves the tables a function body names at each call, on the caller's search
path, where the caller's temporary tables come first, and every role may create them. Here
ann, who may read none of bob's "secret" and write his "team" under a share, makes a
temporary table named as each table chatmem's functions read, holding rows that say bob's
session (message, fact) is hers or that she is a superuser, and tries again what the
triggers refuse. Each try runs in a transaction of its own, and its temporary table goes
with it, so ann's own statements name chatmem's tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from cli_runner import invoke
from pg import Team
from test_postgres_attacks import (
    ATTACKER,
    REFUSED,
    VICTIM,
    _insert,
    catalogue,
    fill,
    missing_id,
    own_row,
)

from chatmem.store.postgres_access import PARENTS

psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")

COLUMNS = {"sessions": "id bigint, owner text",
           "messages": "id bigint, owner text, session_id bigint",
           "facts": "id bigint, owner text, session_id bigint",
           "pg_roles": "rolname name, rolsuper boolean, rolbypassrls boolean"}


def tried(conn: Any, shadows: dict[str, Sequence[int]], sql: str,
          params: Sequence[Any]) -> tuple[str | None, str]:
    """Run `sql` after making, for this transaction only, a temporary table named as each of
    `shadows` that claims those ids for the caller (pg_roles: the caller a superuser):
    the error's class and first line, or (None, "") when it went through."""
    try:
        with conn.transaction():
            for table, ids in shadows.items():
                conn.execute(f"CREATE TEMP TABLE {table} ({COLUMNS[table]}) ON COMMIT DROP")
                if table == "pg_roles":
                    conn.execute("INSERT INTO pg_temp.pg_roles VALUES (current_user, true, true)")
                    continue
                extra = ", NULL" if table != "sessions" else ""
                for id_ in ids:
                    conn.execute(f"INSERT INTO pg_temp.{table} VALUES (%s, current_user{extra})",
                                 [id_])
            conn.execute(sql, params)
            # Rolled back whatever happened: a move that went through leaves no row behind
            # for the next one to trip on.
            raise _Undo
    except _Undo:
        return None, ""
    except psycopg.Error as e:
        return e.sqlstate, str(e).splitlines()[0]


class _Undo(Exception):
    pass


def test_no_temporary_table_of_ones_own_makes_a_row_of_bobs_session_ones_own(
        team: Team) -> None:
    ann = team.url(ATTACKER)
    fill(ann, "notes")
    theirs = fill(team.url(VICTIM), "secret")
    cat = catalogue(team)
    parents = {
        "sessions": theirs,
        "messages": team.rows("SELECT min(id) FROM messages WHERE session_id = %s",
                              [theirs])[0][0],
        "facts": team.rows("SELECT min(id) FROM facts WHERE session_id = %s", [theirs])[0][0],
    }
    went_through = []
    with psycopg.connect(ann, autocommit=True) as conn:
        for table, (parent, key) in PARENTS.items():
            _, row = own_row(team, table, ATTACKER)
            row = {**row, key: parents[parent]}
            if table == "facts":
                row["source_message_id"] = row["source_session_id"] = None
            inserted = [c for c in cat.insertable[table] if c in row]
            state, message = tried(conn, {parent: [parents[parent]]},
                                   *_insert(table, row, inserted))
            if state != REFUSED:
                went_through.append(f"{table} (its {parent} shadowed): {state} {message}")
    assert not went_through, "\n".join(went_through)
    assert team.rows("SELECT count(*) FROM messages WHERE session_id = %s AND owner <> %s",
                     [theirs, VICTIM]) == [(0,)]


def test_no_temporary_table_of_ones_own_tells_a_hidden_row_from_a_missing_one(
        team: Team) -> None:
    ann = team.url(ATTACKER)
    fill(ann, "notes")
    theirs = fill(team.url(VICTIM), "secret")
    message = team.rows("SELECT min(id) FROM messages WHERE session_id = %s", [theirs])[0][0]
    _, fact = own_row(team, "facts", ATTACKER, "session_id IS NOT NULL")
    with psycopg.connect(ann, autocommit=True) as conn:
        for column, target, hidden in (("source_message_id", "messages", message),
                                       ("source_session_id", "sessions", theirs)):
            gone = missing_id(team, target)
            answers = [tried(conn, {target: [hidden, gone]},
                             f"UPDATE facts SET {column} = %s WHERE id = %s", [id_, fact["id"]])
                       for id_ in (hidden, gone)]
            assert answers[0] == answers[1] and answers[0][0] == REFUSED, (column, answers)


def test_no_temporary_pg_roles_makes_a_sharer_the_owner(team: Team) -> None:
    ann, bob = team.url(ATTACKER), team.url(VICTIM)
    shared = fill(bob, "team")
    invoke("sessions", "share", "team", "--with", ATTACKER, "--write", "--db", bob, code=0)
    before = team.rows('SELECT name, retention_days, "user" FROM sessions WHERE id = %s',
                       [shared])
    with psycopg.connect(ann, autocommit=True) as conn:
        for change in ("name = 'renamed-by-ann'", "retention_days = 1", "\"user\" = 'ann'"):
            state, message = tried(conn, {"pg_roles": []},
                                   f"UPDATE sessions SET {change} WHERE id = %s", [shared])
            assert state == REFUSED, (change, message)
            assert "only its owner" in message
    assert team.rows('SELECT name, retention_days, "user" FROM sessions WHERE id = %s',
                     [shared]) == before


def test_every_chatmem_function_has_its_search_path_pinned(team: Team) -> None:
    """A function added later cannot forget it: every chatmem function in the schema."""
    functions = team.rows(
        "SELECT p.proname, p.proconfig FROM pg_proc p WHERE p.pronamespace ="
        " current_schema()::regnamespace AND p.proname LIKE 'chatmem%%' ORDER BY 1")
    assert len(functions) >= 15
    loose = [name for name, config in functions
             if not any(c.startswith("search_path=pg_catalog,") and c.endswith(", pg_temp")
                        for c in config or [])]
    assert not loose
