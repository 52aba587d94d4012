"""What a history on PostgreSQL keeps as SQLite does: a message too long for one tsvector, a
NUL character; and what it says when the server cancels a statement or the role cannot create
the tables of an empty database."""

from __future__ import annotations

import pytest
from pg import PostgresServer

from chatmem.errors import StoreError, StoreFailure
from chatmem.store.postgres_backend import PostgresBackend


def _timing_out(pg_server: PostgresServer, pg_database: str) -> str:
    return pg_server.url(pg_database) + "&options=-c%20statement_timeout%3D300"


@pytest.mark.parametrize("locked", ["sessions", "chatmem_migrations"])
def test_a_statement_timeout_is_named_not_a_lost_connection(
        pg_server: PostgresServer, pg_database: str, locked: str) -> None:
    """A statement that waits past the statement_timeout in the URL (here for a lock another
    session holds; chatmem's own lock wait is longer) is said as that, whether it meets it
    while opening (the migrations' table) or after (a listing reading the sessions)."""
    with pg_server.admin(pg_database) as holder:
        holder.execute("BEGIN")
        holder.execute(f"LOCK TABLE {locked} IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(StoreError) as caught, \
                PostgresBackend(_timing_out(pg_server, pg_database)) as db:
            db.execute("SELECT name FROM sessions WHERE name = ?", ["北京之旅"]).fetchall()
        holder.execute("ROLLBACK")
    message = str(caught.value)
    assert caught.value.kind is StoreFailure.TIMED_OUT, message
    assert "statement_timeout (300ms)" in message and "connection was lost" not in message
    with PostgresBackend(pg_server.url(pg_database)) as db:  # the database itself is fine
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
