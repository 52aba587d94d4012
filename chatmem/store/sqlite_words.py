"""The SQLite backend's full-text index: FTS5 over every message, and the word searches
recall and the logs make of it (`SqliteWords`, part of `SqliteBackend`).

A search across the history ranks with FTS5's own `bm25()`. A conversation's search,
where other conversations are stored, reads the index only in that conversation's runs
of message ids (chatmem.store.session_runs) and weighs its words by its own counts.
A connection keeps the words' counts it made and later reads only the entries added
since (chatmem.store.word_counts).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from operator import itemgetter
from typing import Any

from chatmem import fts
from chatmem.errors import StoreConflict, StoreError, StoreFailure
from chatmem.store.batches import BATCH, in_batches
from chatmem.store.session_runs import SessionRuns
from chatmem.store.word_counts import Ranges, Reading, WordCounts
from chatmem.store.word_terms import SessionWords, WeightedTerm, best_first, match_conditions

MOST_ARMS = 400
"""Index reads (FTS5 queries) one statement of a conversation's word search holds."""


class SqliteWords:
    """The word-index methods of `Backend`, for SQLite."""

    _session_runs: SessionRuns
    _word_counts: WordCounts
    _merges_from_two: bool
    conn: Any
    busy_timeout_ms: int

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def write(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        raise NotImplementedError

    def index_words(self, entries: Sequence[tuple[int, str]]) -> None:
        # One statement for a chunk (a turn's two messages: one, not two); a chunk holding a
        # replaced text fails whole, and is then indexed a message at a time.
        for start in range(0, len(entries), BATCH):
            chunk = entries[start:start + BATCH]
            try:
                self.execute("INSERT INTO messages_fts (rowid, terms) VALUES "
                             + ", ".join(["(?, ?)"] * len(chunk)),
                             [value for entry in chunk for value in entry])
            except StoreConflict:
                self._index_one_by_one(chunk)

    def _index_one_by_one(self, entries: Sequence[tuple[int, str]]) -> None:
        insert = "INSERT INTO messages_fts (rowid, terms) VALUES (?, ?)"
        for message_id, text in entries:
            try:
                self.execute(insert, [message_id, text])
            except StoreConflict:
                # A replaced text (redaction): its old entry goes first. Appends, the common
                # case, never pay for that delete.
                self.execute("DELETE FROM messages_fts WHERE rowid = ?", [message_id])
                self.execute(insert, [message_id, text])
                self._word_counts.forget()

    def unindex_words(self, message_ids: Sequence[int]) -> None:
        # In rowid order: FTS5 writes a new segment whenever a delete goes back below the
        # last rowid it wrote, and ids in a chunk spread over the whole index touch a page
        # of its content table each (see unindex_session_words).
        ids = sorted(message_ids)
        self._word_counts.forget()
        for chunk, marks in in_batches(ids):
            self.execute(f"DELETE FROM messages_fts WHERE rowid IN ({marks})", chunk)

    def unindex_session_words(self, session_ids: Sequence[int]) -> None:
        # One statement, not one per 500 ids: FTS5 writes the delete marks it holds as a
        # new segment at every statement of a transaction (its savepoint), and the segments
        # are merged again and again; ids read in the order of the session's index (by
        # pause) took a page of the content table each. Deleting a 100,000-message session
        # took 2.9 s of CPU that way, 1.1 s in one statement: the subquery's ids come sorted.
        ids = sorted(set(session_ids))
        self._word_counts.forget()
        for chunk, marks in in_batches(ids):
            self.execute("DELETE FROM messages_fts WHERE rowid IN"
                         f" (SELECT id FROM messages WHERE session_id IN ({marks}))", chunk)

    def forget_erased_words(self) -> None:
        # FTS5 only marks index entries deleted; merging the segments drops
        # the erased terms for real (secure_delete then zeroes the freed pages).
        self.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")

    def merge_word_segments(self, pages: int) -> None:
        if self.conn.in_transaction:
            return
        self.execute("PRAGMA busy_timeout = 0")
        try:
            with self.write():
                if not self._merges_from_two:
                    # 'merge' starts on a level holding `usermerge` segments: 2, below the 4
                    # at which a commit merges, so commits find nothing left to merge. FTS5
                    # keeps it in the index's own config; set here rather than by a migration,
                    # which would lock older chatmem versions out of the file.
                    self.execute("INSERT INTO messages_fts (messages_fts, rank)"
                                 " VALUES ('usermerge', 2)")
                self.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('merge', ?)",
                             [pages])
            self._merges_from_two = True
        except StoreError as e:
            if e.kind not in (StoreFailure.BUSY, StoreFailure.READ_ONLY, StoreFailure.REPLACED):
                raise
        finally:
            self.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")

    def count_words_matches(self, terms: Sequence[str], most: int) -> list[int]:
        return self._count_entries(terms, most, None, None)[0]

    def count_words_and_entries(self, terms: Sequence[str],
                                most: int) -> tuple[list[int], int]:
        # The count's first statement reads the highest id (what its known counts rest
        # on): a statement of its own was one more a build.
        counts, newest = self._count_entries(terms, most, None, None)
        if not terms:  # nothing read
            newest = self.execute("SELECT max(id) FROM messages").fetchone()[0]
        return counts, int(newest or 0)

    def session_word_counts(self, terms: Sequence[str], session_id: int,
                            most: int) -> SessionWords | None:
        ranges, last = self._session_ranges(session_id)
        if ranges is None:
            return None
        if not ranges:
            return SessionWords((0,) * len(terms), 0)
        return SessionWords(
            tuple(self._count_entries(terms, most, session_id, tuple(ranges))[0]), last)

    def _count_entries(self, terms: Sequence[str], most: int, scope: int | None,
                       ranges: Ranges | None) -> tuple[list[int], int | None]:
        """Each term's index entries (in `ranges`, a conversation's; None: all), up to
        `most` + 1: what this connection counted before, and the entries added since
        (chatmem.store.word_counts). Inside a transaction, whose writes may yet be rolled
        back, everything is counted and nothing kept. With the highest message id its last
        statement read (None: no terms, or no messages)."""
        if not terms:
            return [], None
        unique = list(dict.fromkeys(terms))
        reuse = not self.conn.in_transaction
        counted = self._entries_counted(unique, most, scope, ranges, reuse=reuse)
        if counted is None:  # another connection committed since: count again, in full
            counted = self._entries_counted(unique, most, scope, ranges, reuse=reuse,
                                            again=True)
        assert counted is not None
        counts, newest = counted
        return [counts[t] for t in terms], newest

    def _entries_counted(self, terms: list[str], most: int, scope: int | None,
                         ranges: Ranges | None, *, reuse: bool,
                         again: bool = False) -> tuple[dict[str, int], int | None] | None:
        """`_count_entries`; None if counts it built on no longer hold."""
        known = self._word_counts
        if reuse:
            counted, reads, basis = known.readings(terms, most, scope, ranges, again=again)
        else:
            counted, reads, basis = {}, [Reading(t, 0, 0, ranges) for t in terms], None
        counted = dict(counted)
        # One statement counts many terms (a Chinese question has a dozen or more), up to
        # MOST_ARMS reads of the index (SQLite's limit on a compound is 500).
        chunks: list[list[Reading]] = [[]]
        newest = None
        arms = 0
        for reading in reads:
            if reading.ranges == ():
                counted[reading.term] = reading.entries  # nothing stored past its count
                continue
            width = 1 if reading.ranges is None else len(reading.ranges)
            if chunks[-1] and arms + width > MOST_ARMS:
                chunks.append([])
                arms = 0
            chunks[-1].append(reading)
            arms += width
        for chunk in chunks:
            # The first statement runs even with nothing to read: it checks what the known
            # counts rest on.
            columns, params = ["(SELECT data_version FROM pragma_data_version)",
                               "(SELECT max(id) FROM messages)"], []
            for reading in chunk:
                count, bounds = self._entries_after(reading, most + 1 - reading.entries)
                columns.append(count)
                params += bounds
            version, newest, *found = self.execute("SELECT " + ", ".join(columns),
                                                   params).fetchone()
            fresh = {r.term: min(r.entries + int(n), most + 1)
                     for r, n in zip(chunk, found, strict=True)}
            counted.update(fresh)
            if basis is None:
                continue
            if known.holds(basis, version):
                through = int(newest or 0) if ranges is None else max(hi for _, hi in ranges)
                known.keep(fresh, most, scope, ranges, through, basis)
            elif basis.relies:
                return None
            # The call's later statements tell nothing of other writers between calls.
            basis = replace(basis, again=True)
        return counted, newest

    @staticmethod
    def _entries_after(reading: Reading, most: int) -> tuple[str, list[Any]]:
        """An expression counting a term's index entries past `reading.after` (in its
        ranges, if any), up to `most`, and its parameters. FTS5 seeks to each range's
        first entry. Entries past a count are read newest first: in a segment that
        holds none of them, that stops at its first entry rather than reading it all
        (61 against 20 µs a word at 10,000 turns)."""
        term = quote_term(reading.term)
        match = "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?"
        if not reading.after:
            if reading.ranges is None:
                return f"(SELECT count(*) FROM ({match} LIMIT ?))", [term, most]
            arms = " UNION ALL ".join([f"{match} AND rowid BETWEEN ? AND ?"]
                                      * len(reading.ranges))
            return (f"(SELECT count(*) FROM ({arms} LIMIT ?))",
                    [*(v for lo, hi in reading.ranges for v in (term, lo, hi)), most])
        ranges = reading.ranges or ((reading.after + 1, 2**62),)
        newest_first = (f"(SELECT count(*) FROM ({match} AND rowid BETWEEN ? AND ?"
                        " ORDER BY rowid DESC LIMIT ?))")
        return (" + ".join([newest_first] * len(ranges)),
                [v for lo, hi in ranges for v in (term, lo, hi, most)])

    def session_word_scores(self, terms: Sequence[WeightedTerm], session_id: int,
                            before_turn: int, limit: int) -> list[tuple[int, float]]:
        ranges, _ = self._session_ranges(session_id)
        if ranges is None:
            ranges = [(0, 2**62)]
        if not ranges or not terms:
            return []
        # The highest id stands for the number of entries, a read of the primary key's
        # end (deleted messages make it a little high: IDF is a logarithm).
        total = int(self.execute("SELECT max(id) FROM messages").fetchone()[0] or 0)
        span = [(min(lo for lo, _ in ranges), max(hi for _, hi in ranges))]
        arms, params = [], []
        for weighted in terms:
            if weighted.index_count is None:
                share, factor, read = "?", weighted.weight, ranges
            else:
                # bm25() is the term's IDF over the whole index times its weight, negated.
                # A term that rare is read in one pass over the conversation's span: each
                # range would read all its entries again for the IDF.
                found = weighted.index_count
                share, read = "? * bm25(messages_fts)", span
                factor = -weighted.weight / max(
                    math.log((total - found + 0.5) / (found + 0.5)), 1e-6)
            for lo, hi in read:
                arms.append(f"SELECT rowid, {share} AS share FROM messages_fts"
                            " WHERE messages_fts MATCH ? AND rowid BETWEEN ? AND ?")
                params += [factor, quote_term(weighted.term), lo, hi]
        # Materialized: flattened into the grouping, bm25() would be out of its context.
        # At most MOST_ARMS index reads a statement (a long input has thousands).
        sums: dict[int, float] = {}
        for start in range(0, len(arms), MOST_ARMS):
            for position, score in self.execute(
                    f"WITH f AS MATERIALIZED ({' UNION ALL '.join(arms[start:start + MOST_ARMS])})"
                    " SELECT m.position, sum(f.share) FROM f CROSS JOIN messages m"
                    " ON m.id = f.rowid WHERE m.session_id = ? AND m.superseded = 0"
                    " AND m.turn < ? GROUP BY m.position",
                    [*params[4 * start:4 * (start + MOST_ARMS)], session_id, before_turn]):
                sums[position] = sums.get(position, 0.0) + score
        return best_first(sums, limit)

    def _session_ranges(self, session_id: int) -> tuple[list[tuple[int, int]] | None, int]:
        """The id ranges of the session's messages and its last position; None (and 0)
        when no other conversation is stored."""
        # Two seeks in the (session, turn) index: is any other conversation stored?
        others = self.execute("SELECT EXISTS (SELECT 1 FROM messages WHERE session_id < ?)"
                              " OR EXISTS (SELECT 1 FROM messages WHERE session_id > ?)",
                              [session_id, session_id]).fetchone()[0]
        if not others:
            return None, 0
        return self._session_runs.ranges(self, session_id)

    def word_scores(self, terms: Sequence[str], session_id: int | None,
                    before_turn: int | None, limit: int) -> list[tuple[int, int, float]]:
        expression = match_terms(list(terms))
        if expression is None:
            return []
        where, params = match_conditions("m.session_id", session_id, before_turn)
        # Sorted here, not by ORDER BY: the matches are few (callers search at most
        # POSTINGS entries), and SQLite's sort of them was a third of the statement (0.1-0.2
        # ms a search of 335 matches). Sorted stably, as SQLite's bounded sort keeps equal
        # scores in the order the index gives them. CROSS JOIN: without the ORDER BY, the
        # planner would read the session's messages and probe the index for each.
        rows = sorted(self.execute(
            "SELECT m.id, m.position, bm25(messages_fts) AS score FROM messages_fts"
            " CROSS JOIN messages m ON m.id = messages_fts.rowid"
            f" WHERE messages_fts MATCH ? AND {where}",
            [expression, *params]).fetchall(), key=itemgetter(2))[:limit]
        # bm25() is lower for better matches. All at once: read one by one, each row cost
        # a step of the cursor's error-wrapping generator.
        return [(message_id, position, -score) for message_id, position, score in rows]

    def newest_word_matches(self, terms: Sequence[str], limit: int,
                            session_id: int | None = None) -> list[int]:
        expression = match_terms(list(terms))
        if expression is None:
            return []
        if session_id is None:
            # FTS5 walks its entries from the highest rowid down and stops at the limit.
            rows = self.execute(
                "SELECT m.id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
                " WHERE messages_fts MATCH ? AND m.superseded = 0"
                " ORDER BY messages_fts.rowid DESC LIMIT ?", [expression, limit])
            return [message_id for (message_id,) in rows]
        ranges, _ = self._session_ranges(session_id)
        if ranges is None:
            ranges = [(0, 2**62)]
        if not ranges:
            return []
        # The conversation's runs of ids, newest first, each walked from its newest entry
        # (CROSS JOIN: the index leads, not the conversation's messages): the compound
        # stops at the limit, so the other conversations' entries are never read, and
        # the oldest run (which may hold theirs) only when the newer ones fall short.
        arm = ("SELECT * FROM (SELECT m.id FROM messages_fts CROSS JOIN messages m"
               " ON m.id = messages_fts.rowid WHERE messages_fts MATCH ?"
               " AND messages_fts.rowid BETWEEN ? AND ? AND m.session_id = ?"
               " AND m.superseded = 0 ORDER BY messages_fts.rowid DESC LIMIT ?)")
        rows = self.execute(" UNION ALL ".join([arm] * len(ranges)) + " LIMIT ?",
                            [*(v for lo, hi in ranges
                               for v in (expression, lo, hi, session_id, limit)), limit])
        return sorted((message_id for (message_id,) in rows), reverse=True)


# -- FTS5 query syntax: quoted, so a user's text is never an operator ------------------


def match_terms(terms: list[str]) -> str | None:
    """An FTS5 MATCH expression for any of `terms`, or None when there are none.

    Quoting every term makes FTS5 syntax in user text (", *, NEAR, -, :)
    plain words, so a query can never be a syntax error.
    """
    if not terms:
        return None
    return " OR ".join(quote_term(t) for t in terms)


def quote_term(term: str) -> str:
    """`term` as an FTS5 phrase (a prefix term as a prefix query: `fts.is_prefix_term`)."""
    if fts.is_prefix_term(term):
        return quote_term(term[0]) + "*"
    return '"' + term.replace('"', '""') + '"'
