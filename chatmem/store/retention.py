"""Retention and erasure: sessions idle too long, facts past their end, a user's whole history.

Times are compared in Python, not SQL: stored stamps are ISO 8601 strings and
the caller's clock (a `datetime`) decides what "now" is, so tests can move it.
Erasure is physical: rows are deleted (their index entries too) and the
caller vacuums the file afterwards.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from chatmem.errors import StoreError
from chatmem.store import sharing, steps
from chatmem.store.connection import Connection, fetch_rows
from chatmem.store.fact_tables import FactTables, profile_in
from chatmem.store.records import FactRecord
from chatmem.store.sessions import SessionTables
from chatmem.store.stored_values import checked_time
from chatmem.timestamps import LONGEST_DAYS, parse_time


@dataclass(frozen=True)
class SessionEntry:
    """A session with its counts, when it was last used, and how long it is kept idle."""

    id: int
    name: str
    user: str | None
    updated_at: str
    keep_days: float
    own: bool
    """Whether `keep_days` is the session's own retention rather than the default."""
    messages: int
    turns: int
    failed: int = 0
    """Requests stored with no reply in the history (as SessionSummary's)."""
    cancelled: int = 0

    def idle_days(self, now: datetime) -> float:
        return (now - parse_time(self.updated_at)) / timedelta(days=1)


class ExpiryCause(StrEnum):
    """Why a fact is erased by a prune or a forget-me."""

    ENDED = "ended"
    """Past its own end (/remember --for): `ended_at`."""
    UNUSED = "unused"
    """No context sent it for fact_idle_days: `unused_days`."""
    USER_PROFILE = "user profile"
    NO_OWNER = "no owner"
    """No session or profile owns it (left by an archive imported before import checked)."""


@dataclass(frozen=True)
class ExpiredFact:
    fact: FactRecord
    cause: ExpiryCause
    ended_at: datetime | None = None
    """A time, not its UTC date: the user reads the day in their zone (render.sessions)."""
    unused_days: int = 0


class RetentionTables:
    """What retention and a user's erasure find and erase (`store.retention`)."""

    def __init__(self, connection: Connection, sessions: SessionTables, facts: FactTables) -> None:
        self._connection = connection
        self._db = connection.db
        self._sessions = sessions
        self._facts = facts

    def set_retention(self, session_id: int, days: int | None) -> None:
        """A session's own retention: None follows the config, 0 keeps it for good."""
        if days is not None and days < 0:
            raise StoreError(f"retention must be 0 (keep) or more days, got {days}")
        if days is not None and days > LONGEST_DAYS:
            raise StoreError(f"retention must be at most {LONGEST_DAYS} days (1000 years),"
                             f" got {days}")
        self._sessions.check_session_writable(session_id, owners_only="set the retention of")
        with self._db.write():
            self._db.execute("UPDATE sessions SET retention_days = ? WHERE id = ?",
                            [days, session_id])

    def idle_sessions(self, now: datetime, default_days: float | None) -> list[SessionEntry]:
        """Sessions idle longer than their own retention, or `default_days` when they have none.

        A session whose own retention is 0 is kept whatever the default says. Only
        the sessions found are counted: at start-up this reads one row per session.
        Only the role's own are read (one shared with it is erased by its owner's retention),
        so another role's row, whatever it holds, never fails this role's prune.
        """
        found: dict[int, float] = {}
        for row in fetch_rows(self._db, "SELECT id, updated_at, retention_days FROM sessions"
                              f" WHERE {self._db.own_rows} ORDER BY updated_at, id"):
            own = row["retention_days"] is not None
            keep = row["retention_days"] if own else default_days
            updated = checked_time(row["updated_at"], f"session {row['id']}: updated_at")
            idle = (now - parse_time(updated)) / timedelta(days=1)
            if keep and idle > keep:
                found[row["id"]] = float(keep)
        return self._entries(found)

    def _entries(self, keep: dict[int, float]) -> list[SessionEntry]:
        """Session id → days kept idle, as entries with their counts."""
        entries = []
        for session_id, days in keep.items():
            row = fetch_rows(self._db,
                "SELECT s.id, s.name, s.\"user\", s.updated_at, s.retention_days,"
                " (SELECT count(*) FROM messages m WHERE m.session_id = s.id"
                " AND m.superseded = 0) AS messages,"
                " (SELECT coalesce(max(m.turn), 0) FROM messages m WHERE m.session_id = s.id"
                " AND m.superseded = 0) AS turns,"
                " (SELECT count(*) FROM turns t WHERE t.session_id = s.id"
                " AND t.status = 'failed') AS failed,"
                " (SELECT count(*) FROM turns t WHERE t.session_id = s.id"
                " AND t.status = 'cancelled') AS cancelled"
                " FROM sessions s WHERE s.id = ?", [session_id])[0]
            entries.append(SessionEntry(
                row["id"], row["name"], row["user"], row["updated_at"], days,
                row["retention_days"] is not None, row["messages"], row["turns"],
                row["failed"], row["cancelled"]))
        return entries

    def expired_facts(self, now: datetime, idle_days: float | None) -> list[ExpiredFact]:
        """Facts past their own end, and extracted facts no context used for `idle_days`.

        A fact stated with /remember has no idle end: the user asked for it and
        gives it an end (--for) if they want one. Forgotten facts are included: an
        expiry erases them for good.
        """
        found = []
        facts = self._facts.facts(include_deleted=True)
        mine = sharing.owned(self._connection,
                             {f.session_id for f in facts if f.session_id is not None})
        for fact in facts:
            if fact.session_id is not None and fact.session_id not in mine:
                continue  # a shared session's facts are its owner's to expire
            ended = None if fact.expires_at is None else parse_time(fact.expires_at)
            if ended is not None and ended <= now:
                found.append(ExpiredFact(fact, ExpiryCause.ENDED, ended_at=ended))
                continue
            if idle_days is None or fact.source_turn is None:
                continue
            unused = now - parse_time(fact.used_at or fact.updated_at)
            if unused / timedelta(days=1) > idle_days:
                found.append(ExpiredFact(fact, ExpiryCause.UNUSED, unused_days=unused.days))
        return found

    def set_fact_expiry(self, fact_id: int, expires_at: str | None) -> FactRecord:
        with self._db.write():
            self._db.execute("UPDATE facts SET expires_at = ? WHERE id = ?", [expires_at, fact_id])
        return self._facts.fact(fact_id)

    def mark_facts_used(self, fact_ids: Iterable[int]) -> None:
        """A context sent these facts now: "read extends life". Best effort, like a cache."""
        ids = sorted(set(fact_ids))
        if not ids:
            return
        marks = ", ".join("?" for _ in ids)
        try:
            with self._db.write():
                self._db.execute(f"UPDATE facts SET used_at = ? WHERE id IN ({marks})",
                                [self._connection.now(), *ids])
        except StoreError:
            pass  # a read-only or busy file: the turn stands, the fact's life is not extended

    def erase_sessions(self, session_ids: Iterable[int]) -> None:
        """Delete sessions physically with everything they own (see delete_session)."""
        ids = list(session_ids)
        if not ids:
            return
        for session_id in ids:
            self._sessions.check_session_writable(session_id, owners_only="erase")
        with self._db.write():
            for session_id in ids:
                steps.erase_session_rows(self._db, session_id)
            self._db.forget_erased_words()

    def erase_facts(self, fact_ids: Iterable[int]) -> None:
        """Delete facts physically, their earlier values with them."""
        ids = list(fact_ids)
        with self._db.write():
            for fact_id in ids:
                self._db.execute("DELETE FROM facts WHERE id = ?", [fact_id])

    def user_sessions(self, user: str) -> list[SessionEntry]:
        """Every session of a user profile, with its counts."""
        where, params = profile_in('"user"', user)
        found = {r["id"]: float(r["retention_days"] or 0) for r in fetch_rows(self._db,
            f"SELECT id, retention_days FROM sessions WHERE {where} ORDER BY created_at, id",
            params)}
        mine = sharing.owned(self._connection, found)
        return self._entries({i: days for i, days in found.items() if i in mine})
