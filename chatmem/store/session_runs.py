"""Where one conversation's messages lie in a SQLite history's index: runs of ids.

A conversation's message ids grow with its positions, but another conversation
had at the same time takes the ids between, so its messages are runs of
consecutive ids (a gap no other conversation's message fills does not
end a run). FTS5 seeks to an id, so a word can be looked for in one
conversation by reading its entries in those runs alone, however often the
others say it. The runs are kept per process and extended by the messages added
since (messages are only ever appended; one deleted later leaves its run too
wide, which only costs a read), for the process, whichever connection asks.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatmem.store.backend import Statements

MOST_RUNS = 16
"""Runs a word is looked for in: the newest, and the older ones as one range."""


@dataclass
class _Known:
    first_id: int
    last_position: int = 0
    runs: list[list[int]] = field(default_factory=list)
    """[first id, last id] of each run, oldest first (the oldest may span older ones)."""


class SessionRuns:
    def __init__(self) -> None:
        self._known: dict[int, _Known] = {}
        # A server's requests may search from threads sharing the connection.
        self._extending = threading.Lock()

    @classmethod
    def of(cls, location: str) -> SessionRuns:
        """The runs this process knows of the history file at `location`: a server opens
        the file again for each request, and reading a long conversation's runs anew
        each time (13 ms at 10,000 turns) would be most of a request's search. An
        in-memory database is its own."""
        if location == ":memory:" or location.startswith("file::memory:"):
            return cls()
        with _OPENED:
            return _BY_LOCATION.setdefault(location, cls())

    def ranges(self, db: Statements, session_id: int) -> tuple[list[tuple[int, int]], int]:
        """The id ranges holding the session's messages (at most MOST_RUNS, newest
        first; the oldest may hold other conversations' messages too) and its last
        position; ([], 0) when it has none."""
        with self._extending:
            return self._ranges(db, session_id)

    def _ranges(self, db: Statements, session_id: int) -> tuple[list[tuple[int, int]], int]:
        known = self._known.get(session_id)
        # Still the conversation it knows (another file may have taken its place): the
        # same first message, and the same message where it last read.
        first, last = db.execute(
            "SELECT (SELECT id FROM messages WHERE session_id = ? ORDER BY position LIMIT 1),"
            " (SELECT id FROM messages WHERE session_id = ? AND position = ?)",
            [session_id, session_id, known.last_position if known else 0]).fetchone()
        if first is None:
            self._known.pop(session_id, None)
            return [], 0
        if known is None or known.first_id != first or (
                known.runs and known.runs[-1][1] != last):
            known = self._known[session_id] = _Known(first)
        for position, message_id in db.execute(
                "SELECT position, id FROM messages WHERE session_id = ? AND position > ?"
                " ORDER BY position", [session_id, known.last_position]):
            if known.runs and not _others_between(db, known.runs[-1][1], message_id):
                known.runs[-1][1] = message_id
            else:
                known.runs.append([message_id, message_id])
                if len(known.runs) > MOST_RUNS:
                    # The two oldest become one: a conversation had between others
                    # keeps MOST_RUNS ranges, not one per sitting.
                    known.runs[:2] = [[known.runs[0][0], known.runs[1][1]]]
            known.last_position = position
        return [(lo, hi) for lo, hi in reversed(known.runs)], known.last_position


_BY_LOCATION: dict[str, SessionRuns] = {}
_OPENED = threading.Lock()


def _others_between(db: Statements, low: int, high: int) -> bool:
    """Whether a message lies between two ids (another conversation's: its own are read
    in order)."""
    if high <= low + 1:
        return False
    found = db.execute("SELECT 1 FROM messages WHERE id > ? AND id < ? LIMIT 1", [low, high])
    return found.fetchone() is not None
