"""An empty PostgreSQL database whose role may not create chatmem's tables (no CREATE on the
schema, PostgreSQL 15's default): reading commands show an empty history, as on a fresh
machine; writing ones say, before a model is called, that an administrator opens it first."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from cli_runner import invoke
from pg import PostgresServer


@pytest.fixture
def empty_as_bob(pg_server: PostgresServer) -> Iterator[str]:
    name = pg_server.create_database()
    with pg_server.admin(name) as conn:
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    yield pg_server.url(name, user="bob")
    pg_server.drop_database(name)


def test_reading_commands_show_an_empty_history(empty_as_bob: str) -> None:
    listed = invoke("sessions", "list", "--db", empty_as_bob, "--json", code=0)
    assert json.loads(listed.stdout) == []
    invoke("facts", "list", "--db", empty_as_bob, code=0)
    invoke("logs", "--db", empty_as_bob, "-q", "北京", code=0)


def test_a_writing_command_says_who_opens_it_first(empty_as_bob: str,
                                                   pg_server: PostgresServer) -> None:
    refused = invoke("chat", "北京之旅", "--db", empty_as_bob, "--provider", "scripted",
                     input="我们去北京\n", code=2)
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert "has no chatmem tables yet, and this role may not create them" in refused.stderr
    assert "an administrator opens it with chatmem first" in refused.stderr
    assert "echo" not in refused.stdout  # the model was not called
    with pg_server.admin(empty_as_bob.split("/")[3].split("?")[0]) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                            ).fetchone()[0] == 0
