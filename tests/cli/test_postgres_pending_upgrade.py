"""A PostgreSQL history an earlier chatmem set up, opened first after an upgrade by a person
who chats: the new migration is its owner's to run, and the person is told so in one line
(which migration, who opens it), not a permission error of a statement they never asked for."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from cli_runner import invoke
from pg import OldHistory, PostgresServer, migrated_before

from chatmem.store import postgres_schema as schema

NEWEST = schema.MIGRATIONS[-1].__name__


@pytest.fixture
def before_newest(pg_server: PostgresServer) -> Iterator[OldHistory]:
    with migrated_before(pg_server, NEWEST) as old:
        yield old


def applied(old: OldHistory) -> set[str]:
    with old.server.admin(old.database) as conn:
        return {r[0] for r in conn.execute(f"SELECT name FROM {schema.BOOKKEEPING}")}


@pytest.mark.parametrize("may_create", [False, True], ids=["no-create", "create-on-schema"])
def test_a_person_is_told_the_owner_opens_it_once(before_newest: OldHistory,
                                                  may_create: bool) -> None:
    if may_create:  # CREATE on the schema is not enough: the tables are the owner's
        with before_newest.server.admin(before_newest.database) as conn:
            conn.execute("GRANT CREATE ON SCHEMA public TO ann")
    ann = before_newest.url("ann")
    refused = invoke("sessions", "list", "--db", ann, code=2)
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert NEWEST in refused.stderr
    assert "only their owner may" in refused.stderr
    assert "sessions list --db" in refused.stderr
    assert "permission denied" not in refused.stderr
    assert NEWEST not in applied(before_newest)

    invoke("sessions", "list", "--db", before_newest.url(before_newest.keeper), code=0)
    assert NEWEST in applied(before_newest)
    assert json.loads(invoke("sessions", "list", "--db", ann, "--json", code=0).stdout) == []
