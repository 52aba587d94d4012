"""What the history itself has to tell the user, as values: a file moved from an older
chatmem's place, an upgrade running or awaited, retention applied or skipped when it
opened, another process holding its write lock.

Opening a workspace and the store return these; chatmem.render.notices words them, as it
does every notice (chatmem.notices).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class HistoryMoved:
    """An older chatmem's history file moved from the config directory to the data one."""

    old: Path
    new: Path


@dataclass(frozen=True)
class OldHistoryLeft:
    """An older chatmem's history file is still in the config directory, not moved since
    one is in the data directory already: its sessions are not read."""

    old: Path
    new: Path


@dataclass(frozen=True)
class HistoryWritableByOthers:
    """Another account could write the history file, or put a file of theirs in its place
    (chatmem.config.trust, as for the config file): messages and system prompts it slips
    in are sent as the user's. Told, not refused: the history is the user's data."""

    path: Path
    mode: int | None = None
    """The file's mode, when others may write the file itself."""
    owner: int | None = None
    """The uid of the other account the file (or its -wal, -shm) belongs to: its owner
    reads it and may change its mode whenever they like."""
    problem: str = ""
    """Else, how its folders let them replace it (trust.Replaceable.problem)."""
    fix: str = ""
    """The command that ends it (chmod go-w …), or what to do."""


@dataclass(frozen=True)
class TaughtFacts:
    """The profile facts an erased session taught its user, which stay (theirs, not the
    session's): `sessions delete`, a prune and retention say so alike."""

    session: str
    user: str | None
    keys: tuple[str, ...]


@dataclass(frozen=True)
class RetentionApplied:
    """Retention erased idle sessions and expired facts when the history opened."""

    sessions: tuple[str, ...]
    messages: int
    facts: int
    vacuumed: bool
    """True: the file was rewritten; False: a PostgreSQL server frees the space itself."""
    taught: tuple[TaughtFacts, ...] = ()


@dataclass(frozen=True)
class IdleSession:
    """A session idle past its retention: `idle_days` since its last use, kept `keep_days`."""

    name: str
    idle_days: float
    keep_days: float


@dataclass(frozen=True)
class RestoredPastRetention:
    """Sessions an archive restored already idle past their retention (an archive keeps when
    each was last used): a chat started in another session, or a prune, erases them."""

    sessions: tuple[IdleSession, ...]


@dataclass(frozen=True)
class RetentionSkipped:
    """Retention could not run this time (a busy or read-only history); the next start tries."""

    reason: str


@dataclass(frozen=True)
class HistoryUpgrading:
    """The history, written by an older chatmem, is being upgraded: migrations `first` to
    `last` (`count` in all) run now, before anything else can use it. Told before they
    run: on a large history they take seconds, and nothing else is said meanwhile."""

    location: str
    first: str
    last: str
    count: int


@dataclass(frozen=True)
class WaitingForUpgrade:
    """Another chatmem holds the history while it upgrades it: this one waits for it to
    finish (at most `seconds`) rather than say the history is busy."""

    location: str
    seconds: int


@dataclass(frozen=True)
class LockHolder:
    """The connection holding a PostgreSQL history's write lock, as pg_stat_activity shows
    it to any role: what a person needs to ask its owner, or an administrator to end it."""

    pid: int
    role: str | None
    application: str | None

    @property
    def about(self) -> str:
        """`pid 4242, role eve, psql`: what pg_stat_activity tells of it."""
        return ", ".join([f"pid {self.pid}", *([f"role {self.role}"] if self.role else []),
                          *([self.application] if self.application else [])])


@dataclass(frozen=True)
class WaitingForWrite:
    """Another process holds the history's write lock (a long import, say) past the usual
    wait: a turn waits for it (at most `seconds`) rather than lose a paid reply or refuse
    to send. Told once, as the wait begins: nothing else is said meanwhile."""

    location: str
    seconds: int
    replied: bool
    """True: the reply came and waits to be stored; False: the input waits to be sent."""
    holder: LockHolder | None = None
    """Who holds the lock, where the backend can tell (PostgreSQL; a SQLite file cannot)."""


