"""Facts restored from an export archive (`sessions import ARCHIVE.zip`): written as they
were kept, their times, their end and their earlier values with them, not as facts stated
now (upsert_fact would date them today and make a forgotten one live)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chatmem.errors import UsageError
from chatmem.store import steps
from chatmem.store.connection import Connection
from chatmem.store.fact_keys import same_key
from chatmem.store.records import FactRecord, FactScope
from chatmem.text import profile_name


@dataclass(frozen=True)
class EarlierValue:
    value: str
    source_session_id: int | None
    source_turn: int | None
    stated_at: str
    replaced_at: str


@dataclass(frozen=True)
class KeptFact:
    """A fact as an archive keeps it, its sessions already the target's ids."""

    key: str
    value: str
    scope: FactScope
    user: str | None
    session_id: int | None
    source_session_id: int | None
    source_turn: int | None
    created_at: str
    updated_at: str
    deleted_at: str | None = None
    expires_at: str | None = None
    used_at: str | None = None
    history: tuple[EarlierValue, ...] = ()


def restore_facts(connection: Connection, facts: Sequence[KeptFact],
                  live: Sequence[FactRecord]) -> int:
    """Insert `facts`, in one transaction, and return how many were; `live` are the
    target's live profile facts. A live profile fact the profile holds live already with
    the same value (the archive imported before, its sessions since renamed) is skipped;
    one whose key it holds with another value is refused before anything is written: two
    live values of one key would each reach contexts."""
    restored = []
    for fact in facts:
        if fact.scope is not FactScope.USER or fact.deleted_at is not None:
            restored.append(fact)
            continue
        user = profile_name(fact.user or "")
        clash = next((f for f in live if f.user is not None and profile_name(f.user) == user
                      and same_key(f.key, fact.key)), None)
        if clash is None:
            restored.append(fact)
        elif clash.value != fact.value:
            raise UsageError(
                f"user {user}'s profile here has {clash.key!r} already ({clash.value!r}), the"
                f" archive {fact.value!r}; forget one (chatmem facts forget {clash.key}) and"
                " import again")
    db = connection.db
    with db.write():
        for fact in restored:
            fact_id = steps.insert_id(
                db, "INSERT INTO facts (scope, \"user\", session_id, key, value, source_turn,"
                    " source_session_id, created_at, updated_at, deleted_at, expires_at,"
                    " used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [fact.scope.value, profile_name(fact.user) if fact.user else None,
                 fact.session_id, fact.key, fact.value, fact.source_turn,
                 fact.source_session_id, fact.created_at, fact.updated_at, fact.deleted_at,
                 fact.expires_at, fact.used_at])
            for earlier in fact.history:
                db.execute(
                    "INSERT INTO fact_history (fact_id, key, value, source_session_id,"
                    " source_turn, stated_at, replaced_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [fact_id, fact.key, earlier.value, earlier.source_session_id,
                     earlier.source_turn, earlier.stated_at, earlier.replaced_at])
    return len(restored)
