"""How long chatmem keeps things, and erasing them: retention, fact expiry, forget-me.

- `retention_days` (config) deletes sessions idle longer than that; a session
  can have its own (`chatmem sessions retention NAME 90d|forever`).
- A fact can have its own end (`/remember --for 7d`); with `fact_idle_days`,
  an extracted fact that no context has sent for that long expires too: every
  context that sends a fact extends its life.
- Both are applied when a chat starts and by `chatmem sessions prune`; what is
  erased is erased physically (index rows, turn contexts that quoted an expired
  fact) and the file is vacuumed.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from chatmem.errors import UsageError
from chatmem.store.records import FactScope
from chatmem.timestamps import LONGEST_DURATION

if TYPE_CHECKING:
    from chatmem.history_notices import TaughtFacts
    from chatmem.store import ExpiredFact, SessionEntry
    from chatmem.store.privacy_protocols import PrivacyStore

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*|[\u4e00-\u9fff]+)\s*$", re.IGNORECASE)
_UNITS = {
    "": 86400, "d": 86400, "day": 86400, "days": 86400,
    "w": 7 * 86400, "week": 7 * 86400, "weeks": 7 * 86400,
    "h": 3600, "hour": 3600, "hours": 3600,
    "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    # A month is 30 days, as a year is 365: lengths, not calendar steps.
    "mo": 30 * 86400, "month": 30 * 86400, "months": 30 * 86400,
    "y": 365 * 86400, "year": 365 * 86400, "years": 365 * 86400,
    # As a Chinese user writes them (30天, 12小时, 6个月), simplified and traditional: they
    # were refused as "not a length of time".
    "天": 86400, "日": 86400,
    "周": 7 * 86400, "週": 7 * 86400, "星期": 7 * 86400, "个星期": 7 * 86400,
    "個星期": 7 * 86400, "礼拜": 7 * 86400, "禮拜": 7 * 86400,
    "小时": 3600, "小時": 3600, "个小时": 3600, "個小時": 3600, "钟头": 3600, "鐘頭": 3600,
    "分钟": 60, "分鐘": 60,
    "月": 30 * 86400, "个月": 30 * 86400, "個月": 30 * 86400,
    "年": 365 * 86400,
}


def parse_duration(text: str, what: str = "a duration") -> timedelta:
    """'30d', '12h', '2w', '6mo', '1y', '45min' or a bare number of days; UsageError otherwise."""
    match = _DURATION.match(text)
    unit = match.group(2).lower() if match else ""
    if match is not None and unit == "m":
        # 6M reads as six months and 6m as six minutes to different people: a prune
        # taken the short way erases nearly everything, so neither is guessed.
        number = match.group(1)
        raise UsageError(f"{what} {text.strip()!r} is ambiguous: write {number}min for minutes"
                         f" or {number}mo for months")
    if match is None or unit not in _UNITS or float(match.group(1)) <= 0:
        raise UsageError(f"{what} must be a length of time like 30d, 12h, 2w or 1y, "
                         f"got {text!r}")
    seconds = float(match.group(1)) * _UNITS[unit]
    if seconds > LONGEST_DURATION.total_seconds():
        # Today plus more than that is past the calendar's year 9999.
        raise UsageError(f"{what} must be at most 1000y, "
                         f"got {text!r}")
    return timedelta(seconds=seconds)


@dataclass
class Erasure:
    """What a prune or forget-me erased (or, dry, would erase)."""

    sessions: list[SessionEntry] = field(default_factory=list)
    facts: list[ExpiredFact] = field(default_factory=list)
    dry_run: bool = False
    taught: dict[int, list[str]] = field(default_factory=dict)
    """Session id → keys of the live profile facts the erased session taught its user: they
    are the user's and stay (`facts forget KEY --purge` erases one), as after `sessions
    delete`."""
    spared: list[SessionEntry] = field(default_factory=list)
    """Sessions idle past their retention but not erased: the command pruning is about to
    use them (prune's `spare`)."""

    @property
    def empty(self) -> bool:
        return not self.sessions and not self.facts

    def taught_facts(self) -> list[TaughtFacts]:
        """What `taught` holds, by session name, in the order the sessions are listed."""
        from chatmem.history_notices import TaughtFacts

        return [TaughtFacts(s.name, s.user, tuple(self.taught[s.id]))
                for s in self.sessions if s.id in self.taught]


def prune(store: PrivacyStore, now: datetime, *, retention_days: float | None,
          fact_idle_days: float | None, dry_run: bool = False,
          spare: Collection[int] = ()) -> Erasure:
    """Erase idle sessions and expired facts as of `now`, then vacuum (unless dry).
    `spare`: ids of sessions kept whatever their idle time (`Erasure.spared` says which of
    them were past it)."""
    idle = store.retention.idle_sessions(now, retention_days)
    sessions = [s for s in idle if s.id not in spare]
    going = {s.id for s in sessions}
    # A session's own facts go with it; they need no report of their own.
    facts = [e for e in store.retention.expired_facts(now, fact_idle_days)
             if e.fact.session_id not in going]
    result = Erasure(sessions, facts, dry_run, _taught(store, sessions, facts),
                     [s for s in idle if s.id in spare])
    if not dry_run and not result.empty:
        _erase(store, result)
    return result


def _taught(store: PrivacyStore, sessions: list[SessionEntry],
            expired: list[ExpiredFact]) -> dict[int, list[str]]:
    """The keys of the profile facts each session teaches that outlive it (read before it
    goes: a fact knows its session by the message that stated it); not those expiring now."""
    going = {(e.fact.user, e.fact.key) for e in expired if e.fact.scope == FactScope.USER}
    taught = {s.id: [key for key in store.redactions.user_facts_from(s.id)
                     if (s.user, key) not in going] for s in sessions}
    return {session_id: keys for session_id, keys in taught.items() if keys}


def forget_user(store: PrivacyStore, user: str, *, dry_run: bool = False) -> Erasure:
    """Every session of a user profile and the profile's facts, erased; then vacuum. A fact
    nobody owns (a session fact without its session, a profile fact without its profile,
    which an archive imported before its import checked could leave) goes too: no other
    erasure would reach it."""
    from chatmem.store import ExpiredFact, ExpiryCause
    from chatmem.text import profile_name

    sessions = store.retention.user_sessions(user)
    # Either form of the name: a history may hold it as typed before names were normalized.
    facts = [ExpiredFact(f, ExpiryCause.USER_PROFILE if f.user is not None
                         else ExpiryCause.NO_OWNER)
             for f in store.facts.facts(include_deleted=True)
             if (f.user is None and f.session_id is None)
             or (f.scope == FactScope.USER and f.user is not None
                 and profile_name(f.user) == profile_name(user))]
    result = Erasure(sessions, facts, dry_run)
    if not dry_run and not result.empty:
        _erase(store, result)
    return result


def _erase(store: PrivacyStore, erasure: Erasure) -> None:
    """All or nothing: a failure on the way (a full disk, Ctrl-C) leaves every row as it was."""
    from chatmem.memory.facts import scrub_fact

    with store.write():
        store.retention.erase_sessions(s.id for s in erasure.sessions)
        store.retention.erase_facts(e.fact.id for e in erasure.facts)
        for expired in erasure.facts:
            # A past context that sent the fact keeps a marker instead of its value.
            scrub_fact(store.facts, expired.fact.id)
    store.vacuum()


def expiry_of(fact: Any, fact_idle_days: float | None) -> str | None:
    """When a fact will expire (ISO time), or None when it is kept until forgotten."""
    from chatmem.timestamps import parse_time, stamp_seconds

    ends = []
    if fact.expires_at:
        ends.append(parse_time(fact.expires_at))
    if fact_idle_days is not None and fact.source_turn is not None:
        last = parse_time(fact.used_at or fact.updated_at)
        with suppress(OverflowError):  # thousands of years: as good as kept
            ends.append(last + timedelta(days=fact_idle_days))
    return stamp_seconds(min(ends)) if ends else None
