"""Ann's session `proj`, holding a fact, shared with bob on a team history: where the tests
of what a grantee may do to the owner's session start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
from cli_runner import run
from pg import NOW, Team

from chatmem.errors import StoreError

NOT_PERMITTED = int(StoreError.exit_code)
INSUFFICIENT_PRIVILEGE = "42501"
"""The SQLSTATE PostgreSQL refuses a row with that row security or a trigger holds back."""
PROFILE = {"CHATMEM_USER": "team"}


def shared(team: Team, mode: str = "--write") -> tuple[str, str]:
    """Ann's and bob's URLs, once ann's `proj` (an entity session that knows her phone) is
    shared with bob (`mode` "--write", or "" for read-only)."""
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "proj", "My name is Ann. My phone is Pixel9.", "--strategy", "entity",
        "--provider", "scripted", code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", *([mode] if mode else []), code=0)
    return ann, bob


def shared_session(url: str, strategy: str = "entity") -> int:
    """The id of `url`'s role's new `strategy` session 旅行, shared with bob for writing
    (made by plain SQL, as the server's rules are what is tested)."""
    with psycopg.connect(url, autocommit=True) as conn:
        session_id = int(conn.execute(
            "INSERT INTO sessions (name, strategy, created_at, updated_at) VALUES"
            " ('旅行', %s, %s, %s) RETURNING id", [strategy, NOW, NOW]).fetchone()[0])
        conn.execute("INSERT INTO session_shares (session_id, grantee, mode)"
                     " VALUES (%s, 'bob', 'write')", [session_id])
    return session_id


def sql_as(url: str, sql: str, params: Any = ()) -> int | str:
    """The rows `sql` changed as the role of `url`, or the SQLSTATE it failed with."""
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            return conn.execute(sql, params).rowcount
        except psycopg.Error as e:
            return str(e.sqlstate)


def profile(url: str, config: Path) -> dict[str, str]:
    """The profile facts of `url`'s role: key → value."""
    facts = json.loads(run(url, "facts", "list", "--json", "--config", str(config),
                           code=0).stdout)
    return {f["key"]: f["value"] for f in facts if f["scope"] == "user"}


def session_facts(url: str, session: str, config: Path) -> dict[str, tuple[str, str | None]]:
    """Key → (value, who stated it: a speaker other than the session's owner)."""
    facts = json.loads(run(url, "facts", "list", session, "--json", "--config", str(config),
                           code=0).stdout)
    return {f["key"]: (f["value"], f["speaker"]) for f in facts if f["scope"] == "session"}


def shared_after(team: Team, tmp_path: Path, hers: str,
                 user_facts: bool = True) -> tuple[str, str, Path]:
    """Ann's and bob's URLs and a config (scripted, `user_facts`), once ann's entity
    session `proj` heard `hers` and is shared with bob for writing."""
    config = tmp_path / "config.toml"
    config.write_text(f'provider = "scripted"\nuser_facts = {str(user_facts).lower()}\n',
                      encoding="utf-8")
    ann, bob = team.url("ann"), team.url("bob")
    run(ann, "ask", "proj", hers, "--strategy", "entity", "--save", "--config", str(config),
        code=0)
    run(ann, "sessions", "share", "proj", "--with", "bob", "--write", code=0)
    return ann, bob, config
