"""Counting the work a store does: statements run, rows read back, SQLite VM steps.

On PostgreSQL the backend reports each statement it runs and the rows it
returned; the server's own work has no counter to read per statement, so
`steps` stays 0 there and EXPLAIN shows how a statement reads instead.

For complexity tests and benchmarks: a turn's work must not grow with the
history, and counts show it without the noise of a shared machine's clock.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatmem.store.connection import Connection

STEP = 100
"""SQLite virtual-machine instructions per counted step."""


@dataclass
class Meter:
    statements: int = 0
    """SQL statements chatmem ran (each execution, transaction control included)."""
    rows: int = 0
    """Rows read back into Python."""
    steps: int = 0
    """Hundreds of SQLite virtual-machine instructions those statements took."""
    index_reads: int = 0
    """Reads the full-text index ran inside chatmem's statements (a search looks up each
    match's length, each term's pages): a search's cost, counted like any other read."""
    index_statements: int = 0
    """Writes the full-text index ran inside chatmem's: FTS5 writes a new segment per
    insert and merges segments now and then, amortized index upkeep counted apart."""
    index_steps: int = 0
    _in_index: bool = False


@contextmanager
def metered(store: Connection) -> Iterator[Meter]:
    """Count what `store` does inside the block; the connection is left as it was after."""
    from chatmem.store.sqlite_backend import SqliteBackend

    if store.db.kind == "postgresql":
        with _metered_postgres(store) as meter:
            yield meter
        return
    if not isinstance(store.db, SqliteBackend):
        raise TypeError(f"metered cannot count the work of a {store.db.kind} store")
    meter = Meter()
    conn = store.db.conn

    def statement(sql: str) -> None:
        # Statements a virtual table runs are traced as comments ("-- INSERT INTO ...").
        nested = sql.startswith("--")
        meter._in_index = nested and not sql.startswith("-- SELECT")
        if meter._in_index:
            meter.index_statements += 1
        elif nested:
            meter.index_reads += 1
        else:
            meter.statements += 1

    def step() -> int:
        if meter._in_index:
            meter.index_steps += 1
        else:
            meter.steps += 1
        return 0  # never interrupt

    def row(_: sqlite3.Cursor, values: tuple[Any, ...]) -> tuple[Any, ...]:
        meter.rows += 1
        return values

    factory = conn.row_factory
    conn.set_trace_callback(statement)
    conn.set_progress_handler(step, STEP)
    conn.row_factory = row
    try:
        yield meter
    finally:
        conn.set_trace_callback(None)
        conn.set_progress_handler(None, STEP)
        conn.row_factory = factory


@contextmanager
def traced(store: Connection) -> Iterator[list[str]]:
    """The statements chatmem runs on `store` (SQLite) inside the block, in order, their
    whitespace folded; those the full-text index runs inside them (traced as comments) left
    out."""
    statements: list[str] = []
    conn = store.db.conn  # type: ignore[attr-defined]
    conn.set_trace_callback(lambda sql: None if sql.startswith("--") else statements.append(
        " ".join(sql.split())))
    try:
        yield statements
    finally:
        conn.set_trace_callback(None)


@contextmanager
def _metered_postgres(store: Connection) -> Iterator[Meter]:
    from chatmem.store.postgres_backend import PostgresBackend

    backend = store.db
    assert isinstance(backend, PostgresBackend)
    meter = Meter()

    def statement(sql: str, params: Any, cursor: Any) -> None:
        meter.statements += 1
        if cursor.description is not None:  # a SELECT, or a RETURNING: its rows come back
            meter.rows += max(cursor.rowcount, 0)

    previous = backend.observe
    backend.observe = statement
    try:
        yield meter
    finally:
        backend.observe = previous
