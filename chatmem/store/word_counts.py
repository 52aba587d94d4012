"""How many index entries a word has, counted once per connection, then only past where it
was last counted.

Recall counts each word of an input in the index, up to a cap, to choose the rare
words it searches; a common word costs the cap's worth of entries read every turn.
A connection keeps each count with the last message id it covers and the id ranges it
was read in (a conversation's, where others share the file), and next time reads
only the entries after that id. The counts stay what a fresh count gives: messages are
appended with higher ids; the connection forgets every count when it deletes or
replaces index entries itself (`forget`), and when another connection has committed
anything since (SQLite's `data_version`), as that may have been a deletion.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

Ranges = tuple[tuple[int, int], ...]
"""Inclusive message id ranges, as `SessionRuns.ranges` gives them."""

MOST_KNOWN = 20_000
"""Counts a connection keeps; past that it starts again (a word is a few dozen bytes)."""


@dataclass(frozen=True)
class Count:
    """A word's entries up to `through`, in `within` (None: the whole index)."""

    entries: int
    """Counted up to the caller's cap + 1, so more than the cap means "at least"."""
    through: int
    within: Ranges | None


@dataclass(frozen=True)
class Reading:
    """What a count still has to read: the entries past `after` in `ranges` (None:
    the whole index), added to `entries` already counted."""

    term: str
    entries: int
    after: int
    ranges: Ranges | None


def below(ranges: Ranges, through: int) -> Ranges:
    """The part of `ranges` at or below `through`."""
    return tuple((lo, min(hi, through)) for lo, hi in ranges if lo <= through)


def above(ranges: Ranges, after: int) -> Ranges:
    """The part of `ranges` past `after`."""
    return tuple((max(lo, after + 1), hi) for lo, hi in ranges if hi > after)


@dataclass(frozen=True)
class Basis:
    """What counts read against known ones rest on: the connection's counts as they were
    when looked up (each `forget`, or another connection's commit, starts a new
    generation)."""

    generation: int
    relies: bool
    """Some count was read against a known one (or was known in full): without that,
    counts on this basis are fresh whatever others committed."""
    again: bool = False
    """Looked up for a count read again in the same call (after another's commit)."""


class WordCounts:
    """One connection's counts, by (conversation or None, word, cap)."""

    def __init__(self) -> None:
        self._known: dict[tuple[int | None, str, int], Count] = {}
        self._version: int | None = None
        self._generation = 0
        self._others_writing = False
        """The last check found another connection's commit: while others write between
        counts, known counts would be forgotten each time, so none are relied on (a count
        read against them would then be read twice)."""
        # A server's requests may search from threads sharing the connection.
        self._lock = threading.Lock()

    def forget(self) -> None:
        """Index entries were deleted or replaced: nothing counted holds any more."""
        with self._lock:
            self._forget()

    def readings(self, terms: Sequence[str], most: int, scope: int | None,
                 ranges: Ranges | None, *,
                 again: bool = False) -> tuple[dict[str, int], list[Reading], Basis]:
        """The counts known in full (past the cap: no entry added changes them), what
        each other term still has to read, and what both rest on. `ranges`: where the
        conversation `scope` lies (None: the whole index); `again`: the same call's
        second look, after its first found another connection's commit."""
        done: dict[str, int] = {}
        reads: list[Reading] = []
        with self._lock:
            relied_on = not self._others_writing
            for term in terms:
                known = self._known.get((scope, term, most)) if relied_on else None
                if known is not None and ranges is not None and (
                        known.within != below(ranges, known.through)):
                    known = None  # the conversation's runs were joined since: count anew
                if known is None:
                    reads.append(Reading(term, 0, 0, ranges))
                elif known.entries > most:
                    done[term] = known.entries
                else:
                    reads.append(Reading(term, known.entries, known.through,
                                         None if ranges is None else above(ranges, known.through)))
            relies = bool(done) or any(r.after for r in reads)
            return done, reads, Basis(self._generation, relies, again)

    def holds(self, basis: Basis, version: int) -> bool:
        """Whether counts built on those known at `basis` are right at `version` (the
        data_version the reading saw): no other connection committed, and this one
        forgot nothing, in between. If another committed, all are forgotten."""
        with self._lock:
            if not basis.again:
                # Whether another connection committed since this one's last call (its
                # first check has nothing to compare with).
                self._others_writing = self._version is not None and version != self._version
            if version != self._version:
                if self._known:
                    self._forget()
                self._version = version
            return self._rests_on(basis)

    def keep(self, counted: dict[str, int], most: int, scope: int | None,
             ranges: Ranges | None, through: int, basis: Basis) -> None:
        """Keep counts made through message id `through` on `basis` (unless something was
        forgotten since)."""
        with self._lock:
            if not self._rests_on(basis):
                return
            if len(self._known) + len(counted) > MOST_KNOWN:
                self._forget()
            within = None if ranges is None else below(ranges, through)
            for term, entries in counted.items():
                self._known[(scope, term, most)] = Count(entries, through, within)

    def _rests_on(self, basis: Basis) -> bool:
        return basis.generation == self._generation

    def _forget(self) -> None:
        self._known.clear()
        self._generation += 1
