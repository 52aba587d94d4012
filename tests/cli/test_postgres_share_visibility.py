"""Who may use a shared session, said where sessions are listed and shown: ann, the owner,
sees whom her trip is shared with and how; bob (read) and carol (write) see their access."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cli_runner import invoke, output
from pg import PostgresServer

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "chatmem.schema.json")
                    .read_text(encoding="utf-8"))


@dataclass
class Team:
    server: PostgresServer
    database: str
    carol: str
    """carol's role name, unique on the server (roles are the server's, not a database's)."""

    def url(self, role: str) -> str:
        return self.server.url(self.database, role)


def run(url: str, *args: str, width: int | None = None) -> str:
    result = invoke(*args, "--db", url, width=width)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def checked(definition: str, data: Any) -> Any:
    sub = {"$schema": SCHEMA["$schema"], "$defs": SCHEMA["$defs"],
           "$ref": f"#/$defs/{definition}"}
    jsonschema.validators.validator_for(SCHEMA)(sub).validate(data)
    return data


@pytest.fixture
def team(pg_server: PostgresServer, pg_template: str) -> Iterator[Team]:
    database = pg_server.create_database(pg_template)
    t = Team(pg_server, database, f"carol_{database}")
    output("admin", "add-user", t.carol, "--db", pg_server.url(database))
    ann = t.url("ann")
    for name, text in (("trip", "去杭州的行程"), ("diary", "ann's own")):
        output("ask", name, text, "--provider", "scripted", "--db", ann)
    output("sessions", "share", "trip", "--with", "bob", "--db", ann)
    output("sessions", "share", "trip", "--with", t.carol, "--write", "--db", ann)
    yield t
    with pg_server.admin(database) as conn:
        conn.execute(f"DROP OWNED BY {t.carol}")
    pg_server.drop_database(database)
    with pg_server.admin() as conn:
        conn.execute(f"DROP ROLE IF EXISTS {t.carol}")


def listed(url: str) -> dict[str, dict[str, Any]]:
    rows = checked("sessions_list", json.loads(run(url, "sessions", "list", "--json")))
    return {(f"{r['shared_by']}/" if r["shared_by"] else "") + r["name"]: r for r in rows}


def test_the_owner_is_shown_whom_a_session_is_shared_with_and_how(team: Team) -> None:
    ann = team.url("ann")
    shown = checked("session_show", json.loads(run(ann, "sessions", "show", "trip", "--json")))
    assert (shown["access"], shown["shared_by"]) == ("own", None)
    assert shown["shared_with"] == [{"grantee": "bob", "mode": "read"},
                                    {"grantee": team.carol, "mode": "write"}]
    text = run(ann, "sessions", "show", "trip")
    assert f"shared with  bob (read), {team.carol} (write)" in text
    assert json.loads(run(ann, "sessions", "show", "diary", "--json"))["shared_with"] == []
    assert "shared with  nobody" in run(ann, "sessions", "show", "diary")
    output("sessions", "unshare", "trip", "--with", "bob", "--db", ann)
    assert json.loads(run(ann, "sessions", "show", "trip", "--json"))["shared_with"] == [
        {"grantee": team.carol, "mode": "write"}]


def test_a_grantee_is_shown_its_own_access_and_nobody_elses(team: Team) -> None:
    for role, mode in (("bob", "read"), (team.carol, "write")):
        url = team.url(role)
        shown = checked("session_show",
                        json.loads(run(url, "sessions", "show", "ann/trip", "--json")))
        # Row security shows a grantee its own share only: the others are ann's to know.
        assert (shown["access"], shown["shared_by"], shown["shared_with"]) == (
            mode, "ann", None)
        assert f"shared by   ann ({mode})" in run(url, "sessions", "show", "ann/trip")


def test_sessions_list_says_the_access_and_how_many_share_ones_own(team: Team) -> None:
    ann, bob, carol = team.url("ann"), team.url("bob"), team.url(team.carol)
    own = listed(ann)
    assert [(own[n]["access"], own[n]["shares"]) for n in ("trip", "diary")] == [
        ("own", 2), ("own", 0)]
    assert [(r["access"], r["shares"]) for r in listed(bob).values()] == [("read", None)]
    assert [(r["access"], r["shares"]) for r in listed(carol).values()] == [("write", None)]
    table = run(bob, "sessions", "list", width=100).splitlines()
    assert table[0].split() == ["name", "strategy", "messages", "turns", "shared", "updated"]
    assert next(line for line in table if "ann/trip" in line).split()[4] == "read"
    owners = run(ann, "sessions", "list", width=100).splitlines()
    assert "with 2" in next(line for line in owners if line.startswith("trip"))
    # Narrow, each session takes two lines: the access is said in words.
    narrow = run(carol, "sessions", "list", width=30)
    assert "shared with you for writing" in " ".join(narrow.split())
