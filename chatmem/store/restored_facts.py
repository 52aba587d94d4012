"""Facts restored from an export archive (`sessions import ARCHIVE.zip`): written as they
were kept, their times, their end and their earlier values with them, not as facts stated
now (upsert_fact would date them today and make a forgotten one live)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from chatmem.errors import ProfileFactClash, UsageError
from chatmem.store import steps
from chatmem.store.connection import Connection
from chatmem.store.fact_keys import same_key
from chatmem.store.records import FactRecord, FactScope
from chatmem.text import profile_name
from chatmem.timestamps import parse_time


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
    speaker: str | None = None
    """Who stated a session fact (FactRecord.speaker)."""


@dataclass(frozen=True)
class ProfileValue:
    """A live profile fact about to be written: whose, its key and its value."""

    user: str
    key: str
    value: str


def repeated_profile_facts(facts: Sequence[ProfileValue], live: Sequence[FactRecord], *,
                           source: str, here: str = "here", copying: bool = False) -> set[int]:
    """Which of `facts` (by index) a profile holds already, live in `live` or earlier in
    `facts`, with the same value: they are left out, so one key keeps one live fact. One it
    holds with another value is refused (ProfileFactClash: the profile, the key, both values) before
    anything is written: two live values of one key would each reach contexts, and
    `facts forget KEY` would refuse to pick one. `source` names where `facts` come from,
    `here` the history they go to."""
    verb = "copy" if copying else "import"
    held = [(profile_name(f.user), f.key, f.value, True) for f in live if f.user is not None]
    repeated: set[int] = set()
    for index, fact in enumerate(facts):
        user = profile_name(fact.user)
        clash = next((h for h in held if h[0] == user and same_key(h[1], fact.key)), None)
        if clash is None:
            held.append((user, fact.key, fact.value, False))
            continue
        _, key, value, kept_here = clash
        if value == fact.value:
            repeated.add(index)
        elif kept_here:
            raise ProfileFactClash(user, key, value, fact.value, source=source, here=here,
                                   copying=copying)
        else:
            # A superuser's source holds every person's profiles: two people's `default`.
            raise UsageError(
                f"{source} holds two values of user {user}'s {key!r} ({value!r} and"
                f" {fact.value!r}: two people's profiles of that name?); nothing was"
                f" {'copied' if copying else 'imported'} (forget one where it is kept, or"
                f" {verb} one person's sessions at a time)")
    return repeated


def is_live(deleted_at: str | None, expires_at: str | None, now: datetime) -> bool:
    """Whether a fact so ended (or not) still reaches contexts at `now`."""
    return deleted_at is None and (expires_at is None or parse_time(expires_at) > now)


def restore_facts(connection: Connection, facts: Sequence[KeptFact],
                  live: Sequence[FactRecord]) -> int:
    """Insert `facts`, in one transaction, and return how many were; `live` are the
    target's live profile facts. A live profile fact the profile holds live already with
    the same value (the archive imported before, its sessions since renamed) is skipped;
    one whose key it holds with another value is refused before anything is written
    (repeated_profile_facts)."""
    now = connection.clock()
    profile = [i for i, f in enumerate(facts) if f.scope is FactScope.USER
               and is_live(f.deleted_at, f.expires_at, now)]
    repeated = repeated_profile_facts(
        [ProfileValue(facts[i].user or "", facts[i].key, facts[i].value) for i in profile],
        live, source="the archive")
    skipped = {profile[i] for i in repeated}
    restored = [fact for i, fact in enumerate(facts) if i not in skipped]
    db = connection.db
    with db.write():
        for fact in restored:
            fact_id = steps.insert_id(
                db, "INSERT INTO facts (scope, \"user\", session_id, key, value, source_turn,"
                    " source_session_id, created_at, updated_at, deleted_at, expires_at,"
                    " used_at, speaker) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [fact.scope.value, profile_name(fact.user) if fact.user else None,
                 fact.session_id, fact.key, fact.value, fact.source_turn,
                 fact.source_session_id, fact.created_at, fact.updated_at, fact.deleted_at,
                 fact.expires_at, fact.used_at, fact.speaker])
            for earlier in fact.history:
                db.execute(
                    "INSERT INTO fact_history (fact_id, key, value, source_session_id,"
                    " source_turn, stated_at, replaced_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [fact_id, fact.key, earlier.value, earlier.source_session_id,
                     earlier.source_turn, earlier.stated_at, earlier.replaced_at])
    return len(restored)
