"""A person leaves the team: `admin remove-user` erases what their role's name holds and
nothing of anyone else's, and the next role of that name starts empty (`add-user` refuses a
name an earlier person's rows are still under). dan keeps a diary shared with bob and
writes into ann's proj, which ann shares with him for writing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from cli_runner import invoke, output
from pg import PostgresServer

from chatmem.errors import NotFound, StoreError, UsageError
from chatmem.store.postgres_access import USER_TABLES


@dataclass
class Team:
    server: PostgresServer
    database: str
    dan: str
    """dan's role name, unique on the server (roles are the server's, not a database's)."""

    def url(self, role: str = "postgres") -> str:
        return self.server.url(self.database, role)

    def value(self, sql: str, params: tuple[object, ...] = ()) -> object:
        with self.server.admin(self.database) as conn:
            row = conn.execute(sql, params).fetchone()
            return row[0] if row else None


def run(url: str, *args: str, code: int = 0, input: str | None = None) -> str:
    return output(*args, "--db", url, code=code, input=input)


def names(url: str) -> list[tuple[str, str | None]]:
    return sorted((s["name"], s["shared_by"])
                  for s in json.loads(run(url, "sessions", "list", "--json")))


@pytest.fixture
def team(pg_server: PostgresServer, pg_template: str) -> Iterator[Team]:
    database = pg_server.create_database(pg_template)
    t = Team(pg_server, database, f"dan_{database}")
    run(t.url(), "admin", "add-user", t.dan)
    ann, bob, dan = t.url("ann"), t.url("bob"), t.url(t.dan)
    run(dan, "ask", "日记", "dan private: salary 5000", "--provider", "scripted")
    run(dan, "sessions", "share", "日记", "--with", "bob")
    run(bob, "ask", "bobs", "bob's own", "--provider", "scripted")
    run(ann, "ask", "proj", "ann starts", "--provider", "scripted")
    run(ann, "sessions", "share", "proj", "--with", t.dan, "--write")
    run(dan, "ask", "ann/proj", "dan adds 一行", "--provider", "scripted")
    with pg_server.driver.connect(dan, autocommit=True) as conn:
        conn.execute("INSERT INTO facts (scope, \"user\", key, value, created_at, updated_at)"
                     " VALUES ('user', 'default', 'salary', '5000', 'x', 'x')")
    yield t
    with pg_server.admin(database) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (t.dan,)).fetchone()
        if exists:
            conn.execute(f"DROP OWNED BY {t.dan}")
    pg_server.drop_database(database)
    with pg_server.admin() as conn:
        conn.execute(f"DROP ROLE IF EXISTS {t.dan}")


def dans_rows(team: Team) -> dict[str, int]:
    """Every row of every user table still under dan's name, or granted to him."""
    counts = {table: int(str(team.value(f"SELECT count(*) FROM {table} WHERE owner = %s",
                                         (team.dan,))))
              for table in USER_TABLES}
    counts["shared with him"] = int(str(team.value(
        "SELECT count(*) FROM session_shares WHERE grantee = %s", (team.dan,))))
    return {table: n for table, n in counts.items() if n}


def test_remove_user_erases_the_person_and_nothing_of_the_others(team: Team) -> None:
    ann, bob = team.url("ann"), team.url("bob")
    before = json.loads(run(team.url(), "admin", "remove-user", team.dan, "--dry-run",
                            "--json"))
    assert before == {"name": team.dan, "sessions": 1, "messages": 2, "profile_facts": 1,
                      "shares_given": 1, "shares_received": 1, "role": "member",
                      "revoked": True, "dropped": False, "still_connects": False,
                      "dry_run": True}
    assert dans_rows(team)  # the dry run changed nothing
    # Asked first; no answer erases nothing.
    run(team.url(), "admin", "remove-user", team.dan, input="n\n", code=1)
    assert dans_rows(team)
    said = invoke("admin", "remove-user", team.dan, "--yes", "--db", team.url())
    assert said.exit_code == 0
    assert said.stderr.splitlines() == [
        f"erased {team.dan}'s 1 session (2 messages), 1 profile fact, 1 share of theirs,"
        f" 1 share with them; took back what add-user granted (PUBLIC may still connect,"
        f" so it may too: --drop-role drops the role)"]
    assert dans_rows(team) == {}
    # What dan wrote into ann's proj is ann's and stays; bob keeps his own, loses dan's share.
    shown = json.loads(run(ann, "sessions", "show", "proj", "--json"))
    assert [m["content"] for m in shown["messages"] if m["role"] == "user"] == [
        "ann starts", f"{team.dan}: dan adds 一行"]  # his words carry his name
    assert names(bob) == [("bobs", None)]
    assert names(ann) == [("proj", None)]
    # The role is left (the test database lets PUBLIC connect), holding nothing.
    assert names(team.url(team.dan)) == []
    assert team.value("SELECT 1 FROM pg_roles WHERE rolname = %s", (team.dan,)) == 1


def test_remove_user_drops_the_role_when_asked(team: Team) -> None:
    said = invoke("admin", "remove-user", team.dan, "--yes", "--drop-role", "--db", team.url())
    assert said.exit_code == 0 and said.stderr.rstrip().endswith(f"dropped role {team.dan}")
    assert team.value("SELECT 1 FROM pg_roles WHERE rolname = %s", (team.dan,)) is None
    assert dans_rows(team) == {}


def test_the_next_role_of_a_removed_name_starts_empty(team: Team) -> None:
    """The finding: dan's role dropped by hand left his diary, profile and write share to
    whoever is made dan next. add-user refuses the name, naming what is left and how to
    erase it; after remove-user the new dan sees nothing of the old one."""
    with team.server.admin(team.database) as conn:
        conn.execute(f"DROP OWNED BY {team.dan}")
    with team.server.admin() as conn:
        conn.execute(f"DROP ROLE {team.dan}")
    refused = run(team.url(), "admin", "add-user", team.dan, code=int(UsageError.exit_code))
    assert refused.count("\n") == 1
    assert "still holds 1 session, 1 profile fact, 2 shares" in refused
    assert f"`chatmem admin remove-user {team.dan}`" in refused and "--keep-history" in refused
    assert team.value("SELECT 1 FROM pg_roles WHERE rolname = %s", (team.dan,)) is None
    said = invoke("admin", "remove-user", team.dan, "--yes", "--db", team.url())
    assert said.exit_code == 0 and "no role" not in said.stderr
    assert "took back" not in said.stderr  # nothing to take back from a role that is gone
    run(team.url(), "admin", "add-user", team.dan)
    assert names(team.url(team.dan)) == []
    # As a name no one shares with him: said as serve says it (not a name-rule error).
    gone = run(team.url(team.dan), "ask", "ann/proj", "still there?", "--provider", "scripted",
               code=int(NotFound.exit_code))
    assert "no session 'ann/proj' is shared with you" in gone


def test_keep_history_gives_a_returning_person_their_sessions(team: Team) -> None:
    with team.server.admin(team.database) as conn:
        conn.execute(f"REVOKE CONNECT ON DATABASE \"{team.database}\" FROM PUBLIC, {team.dan}")
    removed = json.loads(run(team.url(), "admin", "remove-user", team.dan, "--dry-run",
                             "--json"))
    assert removed["role"] == "locked-out"
    run(team.url(), "admin", "add-user", team.dan, code=int(UsageError.exit_code))
    run(team.url(), "admin", "add-user", team.dan, "--keep-history")
    assert names(team.url(team.dan)) == [("proj", "ann"), ("日记", None)]


def test_only_a_role_row_security_does_not_bind_removes_a_person(team: Team) -> None:
    refused = run(team.url("ann"), "admin", "remove-user", team.dan, "--yes",
                  code=int(StoreError.exit_code))
    assert refused.count("\n") == 1
    assert "superuser" in refused and "BYPASSRLS" in refused and "ann sees only" in refused
    refused = run(team.url(), "admin", "remove-user", "postgres", "--yes",
                  code=int(UsageError.exit_code))
    assert refused.count("\n") == 1 and "connected" in refused
    assert len(dans_rows(team)) > 1


def test_a_superuser_is_told_whose_session_it_is_not_that_it_was_shared(team: Team) -> None:
    """A superuser reads dan's diary because row security does not bind it, not because dan
    shared it: its refusals say so, and name the admin's way (remove-user)."""
    superuser = team.url()
    for args in (("sessions", "delete", f"{team.dan}/日记", "--yes"),
                 ("ask", f"{team.dan}/日记", "hi", "--provider", "scripted")):
        refused = run(superuser, *args, code=int(StoreError.exit_code))
        assert "shared with you" not in refused
        assert (f"session '{team.dan}/日记' is {team.dan}'s and not shared with postgres,"
                " a superuser") in refused
        assert f"chatmem admin remove-user {team.dan}" in refused
    assert int(str(team.value("SELECT count(*) FROM messages m JOIN sessions s ON"
                              " s.id = m.session_id WHERE s.owner = %s", (team.dan,)))) == 2


def _drop_dan_by_hand(team: Team) -> None:
    """dan leaves: his grants revoked and his role dropped by SQL, his rows left."""
    with team.server.admin(team.database) as conn:
        conn.execute(f'REVOKE CONNECT ON DATABASE "{team.database}" FROM {team.dan}')
        conn.execute(f"REVOKE USAGE ON SCHEMA public FROM {team.dan}")
    with team.server.admin() as conn:
        conn.execute(f"DROP ROLE {team.dan}")


def test_a_role_made_outside_chatmem_does_not_take_a_dropped_persons_rows(team: Team) -> None:
    """The finding: a login role made by provisioning (LDAP sync) under a departed person's
    name could connect as PUBLIC may, which add-user took for membership: it granted the
    new dan the old one's diary and ann's write share."""
    _drop_dan_by_hand(team)
    run(team.url(), "admin", "add-user", team.dan, code=int(UsageError.exit_code))
    with team.server.admin() as conn:
        conn.execute(f"CREATE ROLE {team.dan} LOGIN")
    refused = run(team.url(), "admin", "add-user", team.dan, code=int(UsageError.exit_code))
    assert refused.count("\n") == 1
    assert "still holds 1 session, 1 profile fact, 2 shares" in refused
    assert f"`chatmem admin remove-user {team.dan}`" in refused and "--keep-history" in refused
    assert team.value("SELECT has_database_privilege(%s, current_database(), 'CONNECT')"
                      " AND NOT EXISTS (SELECT 1 FROM pg_database d, aclexplode(d.datacl) a"
                      " WHERE d.datname = current_database() AND a.grantee = %s::regrole)",
                      (team.dan, team.dan)) is True  # not granted: PUBLIC's CONNECT only
    removed = json.loads(run(team.url(), "admin", "remove-user", team.dan, "--dry-run",
                             "--json"))
    assert removed["role"] == "locked-out" and removed["sessions"] == 1
    # --sql, which runs nothing, gives the check as a comment: a query counting the same.
    printed = invoke("admin", "add-user", team.dan, "--sql", "--database", team.database)
    query = [line for line in printed.stdout.splitlines() if line.startswith("-- SELECT")]
    with team.server.admin(team.database) as conn:
        assert conn.execute(query[0].removeprefix("-- ")).fetchone() == (1, 1, 2)
    run(team.url(), "admin", "remove-user", team.dan, "--yes")
    run(team.url(), "admin", "add-user", team.dan)
    assert names(team.url(team.dan)) == []


def test_the_same_person_is_added_again_and_kept_with_keep_history(team: Team) -> None:
    # dan, never dropped, holds add-user's grant: his rows are his.
    said = invoke("admin", "add-user", team.dan, "--db", team.url())
    assert said.exit_code == 0 and "could already connect" in said.stderr
    assert names(team.url(team.dan)) == [("proj", "ann"), ("日记", None)]
    # Dropped and made again by provisioning, the same person coming back keeps them.
    _drop_dan_by_hand(team)
    with team.server.admin() as conn:
        conn.execute(f"CREATE ROLE {team.dan} LOGIN")
    run(team.url(), "admin", "add-user", team.dan, "--keep-history")
    assert names(team.url(team.dan)) == [("proj", "ann"), ("日记", None)]
    run(team.url(), "admin", "add-user", team.dan)  # now granted: a member
