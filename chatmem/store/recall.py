"""What recall reads by words and positions: BM25 matches, messages by position, sittings
(its vectors are chatmem.store.vectors).

Every read is bounded by what the ranking needs: a search scores a bounded
number of index entries, messages are read by position through the session's
index, sitting starts through the (session, gap) index.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from chatmem import fts
from chatmem.store.batches import in_batches
from chatmem.store.connection import Connection, fetch_value
from chatmem.store.postgres_writers import trusted_count, trusted_entry
from chatmem.store.records import MessageRecord, as_read, message_columns, writer_column
from chatmem.store.word_terms import SessionWords, WeightedTerm
from chatmem.timestamps import has_zone, parse_time

if TYPE_CHECKING:
    from chatmem.store.backend import Backend


POSTINGS = 1500
"""Index entries a recall search may score: its cost is bounded by this, not by the history."""
COUNTED_TOGETHER = 200
"""Query terms whose index entries one statement counts (SQLite returns at most 2,000
columns by default)."""
UNKNOWN_PAUSE = float("inf")
"""The pause stored before a session's first message, or where a time cannot be read."""


def pause(before: str | None, at: str | None) -> float:
    """Seconds between two stored times; UNKNOWN_PAUSE when either is missing or unreadable
    (a time without a zone is unreadable: no sitting is drawn from a guess)."""
    if not (before and at and has_zone(before) and has_zone(at)):
        return UNKNOWN_PAUSE
    return (parse_time(at) - parse_time(before)).total_seconds()


def rare_terms(db: Backend, terms: Iterable[str], postings: int) -> list[str]:
    """The rarest of `terms` whose index entries add up to at most `postings`.

    The rarer terms, which weigh most in BM25, are kept first; a term that appears
    nowhere, or in more than half the budget's entries (it would crowd out the rest), is
    left out. Each count stops there, so the check itself reads at most half the budget
    per term.
    """
    return [term for _, term in rare_counts(db, terms, postings)[0]]


def rare_counts(db: Backend, terms: Iterable[str],
                postings: int) -> tuple[list[tuple[int, str]], int]:
    """`rare_terms`, each with its count of index entries, rarest first; with the index's
    entries (its highest message id), read alongside."""
    terms = list(terms)
    unique = list(dict.fromkeys(terms))
    counts: dict[str, int] = {}
    entries = 0
    for start in range(0, len(unique), COUNTED_TOGETHER):
        chunk = unique[start : start + COUNTED_TOGETHER]
        found, newest = db.count_words_and_entries(chunk, postings // 2)
        counts.update(zip(chunk, found, strict=True))
        entries = max(entries, newest)
    return within_budget([(counts[term], term) for term in terms], postings), entries


def term_counts(db: Backend, terms: Sequence[str], most: int) -> dict[str, int]:
    """Each distinct term's index entries, counted up to `most` + 1."""
    unique = list(dict.fromkeys(terms))
    # One statement counts COUNTED_TOGETHER terms (a question has a dozen or more).
    counts: dict[str, int] = {}
    for start in range(0, len(unique), COUNTED_TOGETHER):
        chunk = unique[start : start + COUNTED_TOGETHER]
        counts.update(zip(chunk, db.count_words_matches(chunk, most), strict=True))
    return counts


def within_budget(counted: Iterable[tuple[int, str]], postings: int) -> list[tuple[int, str]]:
    """The rarest of (entries, term) whose entries add up to at most `postings`, rarest
    first; a term found nowhere, or in more than half the budget, is left out."""
    kept, used = [], 0
    for found, term in sorted((n, t) for n, t in counted if 0 < n <= postings // 2):
        if used + found > postings:
            break
        kept.append((found, term))
        used += found
    return kept


@dataclass(frozen=True)
class WordMatches:
    """A search's best matches (position → BM25, higher is better) and what the query
    could score: the BM25 of a message of average length holding each searched term
    once (the sum of their IDFs), so a match of one common word of a long question
    can be told from a match of all of it."""

    scores: dict[int, float] = field(default_factory=dict)
    ceiling: float = 0.0
    entries: dict[str, int] = field(default_factory=dict)
    """Each searched term's index entries (in this conversation, where others are
    stored too), counted up to half of POSTINGS: how rare it is."""
    alone: bool = False
    """The search found the conversation alone in the index (no other's entries)."""


def idf(entries: int, found: int) -> float:
    """A term's inverse document frequency as FTS5's BM25 ranking weighs it (floored above 0)."""
    return max(math.log((entries - found + 0.5) / (found + 0.5)), 1e-6)


CandidateRow = tuple[int, int, int, str, str, int | None, str]
"""position, id, turn, role, content, stored token count, created_at
(RecallTables.candidate_rows)."""


class RecallTables:
    """What recall ranks: positions, sittings and word matches (`store.recall`)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._db = connection.db

    def count_before(self, session_id: int, turn: int) -> int:
        """How many of the session's messages come before `turn` (positions run 1, 2, …)."""
        first = fetch_value(self._db,
            "SELECT min(+position) FROM messages WHERE session_id = ? AND turn ="
            " (SELECT min(turn) FROM messages WHERE session_id = ? AND turn >= ?"
            " AND superseded = 0)",
            [session_id, session_id, turn])
        return int(first) - 1 if first is not None else self.last_position(session_id)

    def last_position(self, session_id: int) -> int:
        """The position of the session's last message (0 when it has none)."""
        return int(fetch_value(self._db, "SELECT position FROM messages WHERE session_id = ?"
                               " ORDER BY position DESC LIMIT 1", [session_id]) or 0)

    def newest_message(self, session_id: int) -> MessageRecord | None:
        """The session's last message in memory (None when it has none): a replaced turn's
        (/retry, /edit-last) are not, as `messages_at` does not read them. One read, where
        its position and then its time were two for every recall."""
        row = self._db.execute(f"SELECT {message_columns(self._db.kind)} FROM messages"
                               " WHERE session_id = ? AND superseded = 0"
                               " ORDER BY position DESC LIMIT 1",
                               [session_id]).fetchone()
        return None if row is None else MessageRecord(*row)

    def last_message_id(self, session_id: int) -> int:
        return int(fetch_value(self._db, "SELECT id FROM messages WHERE session_id = ?"
                               " AND superseded = 0 ORDER BY position DESC LIMIT 1",
                               [session_id]) or 0)

    def index_untrusted_words(self, session_id: int, after_id: int = 0) -> int:
        """Index again the session's messages past `after_id` whose word entry this role
        does not trust (p027: gone, or another role's, as a write share's grantee deleted
        or rewrote them by plain SQL), as its own; the id of the last message checked.

        On PostgreSQL only (a file is one user's: no statement). The first look reads the
        session's messages, each entry looked up by key, once a process (as the vectors'
        backlog does); later ones only the messages since."""
        if self._db.kind != "postgresql":
            return after_id
        last = int(fetch_value(self._db, "SELECT id FROM messages WHERE session_id = ?"
                               " ORDER BY position DESC LIMIT 1", [session_id]) or after_id)
        rows = self._db.execute(
            "SELECT m.id, m.role, m.content FROM messages m WHERE m.session_id = ?"
            " AND m.id > ? AND m.id <= ? AND m.superseded = 0 AND NOT EXISTS (SELECT 1"
            f" FROM message_words w WHERE w.message_id = m.id AND {trusted_entry('w')})"
            " ORDER BY m.id", [session_id, after_id, last]).fetchall()
        for start in range(0, len(rows), 500):
            with self._db.write():
                self._db.index_words([(int(i), fts.message_index_text(role, content))
                                      for i, role, content in rows[start:start + 500]])
        return max(last, after_id)

    def messages_at(self, session_id: int, positions: Iterable[int]) -> dict[int, MessageRecord]:
        """The session's messages at `positions` (position → record), through its index."""
        wanted = sorted(set(positions))
        found: dict[int, MessageRecord] = {}
        for chunk, marks in in_batches(wanted):
            for row in self._db.execute(f"SELECT {message_columns(self._db.kind)} FROM messages"
                                       f" WHERE session_id = ? AND position IN ({marks})"
                                       " AND superseded = 0", [session_id, *chunk]):
                record = MessageRecord(*row)
                found[record.position] = record
        return found

    def candidate_rows(self, session_id: int, positions: Iterable[int],
                       tokenizer: str) -> list[CandidateRow]:
        """The session's messages at `positions` as recall packs them: position, id,
        turn, role, content, the stored token count under `tokenizer` (None: not
        counted there) and the time, as plain tuples, in no particular order: not
        records, as recall reads hundreds of candidates a turn (and the days they were
        said: their times come with them). One statement where `messages_at` and the
        counts would be two."""
        wanted = sorted(set(positions))
        found: list[CandidateRow] = []
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join(["?"] * len(chunk))
            rows = self._db.execute(
                "SELECT m.position, m.id, m.turn, m.role, m.content, (SELECT c.tokens"
                " FROM token_counts c WHERE c.message_id = m.id AND c.tokenizer = ?"
                f"{trusted_count(self._db.kind, 'c')}),"
                f" m.created_at{writer_column(self._db.kind, 'm')} FROM messages m"
                f" WHERE m.session_id = ? AND m.position IN ({marks})"
                " AND m.superseded = 0", [tokenizer, session_id, *chunk]).fetchall()
            if self._db.kind == "postgresql":
                rows = [_as_read(*row) for row in rows]
            found += cast("list[CandidateRow]", rows)
        return found

    def word_matches(self, session_id: int, query: str, *, before_turn: int,
                     limit: int) -> WordMatches:
        """Position → BM25 (higher is better) of the session's best `limit` matches of
        `query` before `before_turn` (WordMatches.scores: positions and scores only, as
        recall ranks them itself), with what the query could score (WordMatches.ceiling).

        Only the query's rarest terms are searched, within POSTINGS index entries
        (`rare_terms`): scoring reads every entry of every term it scores, so a
        common word would make a search cost a share of the whole history.

        In a file of one conversation, the ceiling's IDFs count entries as FTS5 does,
        over the whole index; the number of entries is taken as the highest message
        id, read with the terms' counts (deleted messages make it a little high: IDF
        is a logarithm). Where others are stored, terms are chosen, weighed and
        bounded by this conversation's own counts (`_conversation_matches`)."""
        terms = fts.search_terms(query)
        here = self._db.session_word_counts(terms, session_id, POSTINGS // 2) if terms else None
        if here is not None:
            return self._conversation_matches(session_id, terms, here, before_turn, limit)
        counted, entries = rare_counts(self._db, terms, POSTINGS)
        if not counted:
            return WordMatches(alone=bool(terms))
        scores = {position: score for _, position, score in self._db.word_scores(
            [term for _, term in counted], session_id, before_turn, limit)}
        ceiling = sum(idf(max(entries, found), found) for found, term in counted
                      if term not in fts.UNSCORED_WORDS)
        return WordMatches(scores, ceiling, {term: found for found, term in counted},
                           alone=bool(terms))

    def _conversation_matches(self, session_id: int, terms: list[str], here: SessionWords,
                              before_turn: int, limit: int) -> WordMatches:
        """`word_matches` in a history of several conversations, by this one's own
        counts: the words rare in it are searched, each weighed by its IDF in it, so
        another conversation's history does not decide what this one recalls (a name it
        says all the time, or never). A term rare in the whole index keeps BM25's weight
        of how often a message says it; one common there (BM25 would read all its
        entries) counts a match as a message of average length saying it once."""
        kept = within_budget(zip(here.counts, terms, strict=True), POSTINGS)
        # Counted in the whole index only for the terms kept.
        counts = term_counts(self._db, [term for _, term in kept], POSTINGS // 2)
        weighted = [WeightedTerm(term, idf(max(here.entries, found), found),
                                 counts[term] if counts[term] <= POSTINGS // 2 else None)
                    for found, term in kept]
        scores = dict(self._db.session_word_scores(weighted, session_id, before_turn, limit))
        return WordMatches(scores, sum(w.weight for w in weighted
                                       if w.term not in fts.UNSCORED_WORDS),
                           {term: found for found, term in kept})

    def rare_word_matches(self, session_id: int, text: str, *, before_turn: int, most: int,
                          limit: int, alone: bool = False) -> WordMatches:
        """The messages before `before_turn` holding words of `text` that at most `most` of
        this conversation's messages hold (`entries`: those words, with their counts), as
        `word_matches` scores them: a search of a few short index entries, its counts
        stopped at `most` (chatmem.memory.later_mentions). `alone`: a search of the same
        build found the conversation alone in the index (WordMatches.alone), not asked
        again (a statement of each retrieval build)."""
        terms = fts.search_terms(text)
        here = (self._db.session_word_counts(terms, session_id, most)
                if terms and not alone else None)
        if here is not None:
            rare = [(found, term) for found, term in zip(here.counts, terms, strict=True)
                    if 0 < found <= most]
            if not rare:
                return WordMatches()
            return self._conversation_matches(
                session_id, [term for _, term in rare],
                SessionWords(tuple(found for found, _ in rare), here.entries),
                before_turn, limit)
        counts = term_counts(self._db, terms, most)
        rare = [(found, term) for term, found in counts.items() if 0 < found <= most]
        if not rare:
            return WordMatches()
        scores = {position: score for _, position, score in self._db.word_scores(
            [term for _, term in rare], session_id, before_turn, limit)}
        return WordMatches(scores, 0.0, {term: found for found, term in rare})

    def newest_matches(self, session_id: int, query: str, *,
                       limit: int) -> list[MessageRecord]:
        """The session's newest `limit` messages holding any of `query`'s words, newest
        first: what a search finds of words too common for `word_matches` to score, read
        from the newest end of the index (as many entries as it returns, about)."""
        ids = self._db.newest_word_matches(fts.search_terms(query), limit, session_id)
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        found = {record.id: record for record in (MessageRecord(*row) for row in self._db.execute(
            f"SELECT {message_columns(self._db.kind)} FROM messages WHERE id IN ({marks})", ids))}
        return [found[i] for i in ids if i in found]

    def rare_terms(self, terms: Iterable[str], postings: int) -> list[str]:
        """`rare_terms` of this store's index."""
        return rare_terms(self._db, terms, postings)

    # -- sittings: runs of messages without a long pause -----------------------------

    def sitting_starts(self, session_id: int, gap_seconds: float, *,
                       after: int = 0) -> tuple[list[int], int]:
        """Positions after `after` where a sitting starts (a pause over `gap_seconds`
        before it, or no readable time), and the session's last position.

        The first read goes through the (session, gap) index, so it costs the
        number of sittings, not of messages; later reads (`after` the last one)
        read only the messages added since. A message with no pause recorded
        (a file from before m007) has it worked out here, in memory: a read
        never writes.
        """
        if after:
            # One read of what was added (a turn's two messages), where three reads (the
            # recorded pauses, the unrecorded, the last position) each sought them again.
            added = self._db.execute(
                "SELECT m.position, m.superseded, m.gap_s, p.created_at, m.created_at"
                " FROM messages m LEFT JOIN messages p ON p.session_id = m.session_id"
                " AND p.position = m.position - 1 WHERE m.session_id = ? AND m.position > ?",
                [session_id, after]).fetchall()
            if not added:
                return [], self.last_position(session_id)
            # A pause not recorded is worked out as below; a replaced turn's messages start
            # no sitting, yet one of them may be the last position.
            starts = [position for position, superseded, gap, before, at in added
                      if not superseded
                      and (pause(before, at) if gap is None else gap) > gap_seconds]
            return sorted(starts), max(position for position, *_ in added)
        rows = self._db.execute(
            "SELECT position FROM messages WHERE session_id = ? AND gap_s > ?"
            " AND superseded = 0", [session_id, gap_seconds])
        starts = [position for (position,) in rows]
        unrecorded = self._db.execute(
            "SELECT m.position, p.created_at, m.created_at FROM messages m"
            " LEFT JOIN messages p ON p.session_id = m.session_id AND p.position = m.position - 1"
            " WHERE m.session_id = ? AND m.position > ? AND m.gap_s IS NULL"
            " AND m.superseded = 0",
            [session_id, after])
        starts += [position for position, before, at in unrecorded
                   if pause(before, at) > gap_seconds]
        return sorted(starts), self.last_position(session_id)


def _as_read(position: int, message_id: int, turn: int, role: str, content: str,
             tokens: int | None, said: str, writer: str | None) -> CandidateRow:
    """A candidate as read (MessageRecord.writer): after its writer's label, counted anew
    when that changes it (its stored count is of the text as stored)."""
    text = as_read(role, content, writer)
    return (position, message_id, turn, role, text, tokens if text == content else None, said)
