"""The tables and columns SQLite's later migrations added (m009..m013, m017), on PostgreSQL:
p003..p006, p008 and p012, run in the order postgres_schema lists.

Each new table gets its row-level policies as p001's did (postgres_policies), and each new
column its own grant, since p001 and p007 granted UPDATE and INSERT column by column.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatmem.store.postgres_policies import (
    policies,
    session_readable,
    session_writable,
    through,
)
from chatmem.store.postgres_tables import OWNER

Execute = Callable[..., Any]
"""Runs one statement, with its parameters (%s) if any, and returns its cursor (psycopg's
Connection.execute)."""


def p003_superseded_turns(execute: Execute) -> None:
    """SQLite's m009: a replaced turn's messages leave memory, the turn names its replacement."""
    execute("ALTER TABLE messages ADD COLUMN superseded bigint NOT NULL DEFAULT 0")
    execute("ALTER TABLE turns ADD COLUMN superseded_by bigint")
    # p001 granted UPDATE column by column; new columns need their own grant.
    execute("GRANT UPDATE (superseded) ON messages TO PUBLIC")
    execute("GRANT UPDATE (superseded_by) ON turns TO PUBLIC")


def p004_vector_cache(execute: Execute) -> None:
    """SQLite's m010: stored vectors found by the sha256 of the text they embed.

    Keyed per owner, and readable as the message it points to is: a role
    never learns from the cache that somebody else's text was embedded.
    """
    execute(f"""
CREATE TABLE vector_cache (
    model text NOT NULL,
    digest text NOT NULL,
    message_id bigint NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    context bigint NOT NULL,
    {OWNER},
    PRIMARY KEY (owner, model, digest)
)""")
    execute("CREATE INDEX vector_cache_message ON vector_cache (message_id)")
    writable = through("messages", "m", "vector_cache.message_id",
                        session_writable("m.session_id"))
    # Whoever may erase the message's vectors (a redaction) may erase its entries.
    for statement in policies("vector_cache", "false", "false", insert=f"({writable})",
                               delete=writable):
        execute(statement)
    execute("GRANT SELECT, INSERT, DELETE ON vector_cache TO PUBLIC")


def p005_index_leases(execute: Execute) -> None:
    """SQLite's m011: who embeds a session's backlog, one lease per session and model.

    Readable and writable as its session is: whoever may store the session's
    vectors may take over a lease its holder let expire.
    """
    execute(f"""
CREATE TABLE index_leases (
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    model text NOT NULL,
    pid bigint NOT NULL,
    host text NOT NULL,
    heartbeat_at text NOT NULL,
    expires_at text NOT NULL,
    {OWNER},
    PRIMARY KEY (session_id, model)
)""")
    for statement in policies("index_leases", session_readable("index_leases.session_id"),
                               session_writable("index_leases.session_id"),
                               insert=f"({session_writable('index_leases.session_id')})"):
        execute(statement)
    execute("GRANT SELECT, INSERT, DELETE ON index_leases TO PUBLIC")
    execute("GRANT UPDATE (pid, host, heartbeat_at, expires_at) ON index_leases TO PUBLIC")


def p006_images(execute: Execute) -> None:
    """SQLite's m012: images attached to messages, once per session by their sha256.

    Readable and writable as their session is, like the session's messages. (Kept apart
    from the row-security migrations being added beside it: renumber on rebase.)
    """
    execute(f"""
CREATE TABLE images (
    session_id bigint NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    digest text NOT NULL,
    mime text NOT NULL,
    width bigint NOT NULL,
    height bigint NOT NULL,
    data bytea NOT NULL,
    created_at text NOT NULL,
    {OWNER},
    PRIMARY KEY (session_id, digest)
)""")
    for statement in policies("images", session_readable("images.session_id"),
                               session_writable("images.session_id"),
                               insert=f"({session_writable('images.session_id')})"):
        execute(statement)
    execute("GRANT SELECT, INSERT, DELETE ON images TO PUBLIC")


def p008_session_erasures(execute: Execute) -> None:
    """SQLite's m013: how many times text left a session's memory, for engines kept open."""
    execute("ALTER TABLE sessions ADD COLUMN erasures bigint NOT NULL DEFAULT 0")
    # p001 granted UPDATE column by column; new columns need their own grant.
    execute("GRANT UPDATE (erasures) ON sessions TO PUBLIC")


def p012_probes_before_prompt(execute: Execute) -> None:
    """SQLite's m017: whether a probe was asked before the system prompt change after its
    message."""
    execute("ALTER TABLE probes ADD COLUMN before_prompt bigint NOT NULL DEFAULT 0")
    # p007 granted INSERT and UPDATE column by column; a new column needs its own grant.
    execute("GRANT INSERT (before_prompt), UPDATE (before_prompt) ON probes TO PUBLIC")
