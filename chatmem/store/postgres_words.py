"""The PostgreSQL backend's word index: `message_words` (a tsvector per message) and the
word searches recall and the logs make of it, ranked by BM25 exactly as SQLite's FTS5
ranks them (`PostgresWords`, part of `PostgresBackend`)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from chatmem import fts
from chatmem.store.postgres_writers import trusted_entry
from chatmem.store.word_terms import SessionWords, WeightedTerm, best_first, match_conditions

K1, B = 1.2, 0.75
"""BM25's parameters, FTS5's defaults."""
COUNTED_TOGETHER = 200
"""Terms one statement counts (a select list holds at most 1,664 columns)."""
_TOKEN = re.compile(r"[^\W_]+")
"""What FTS5's unicode61 tokenizer counts as a token (letters and digits) in indexed terms."""
TEXT_SEARCH = "english"
"""Stemming as SQLite's porter tokenizer does; CJK bigrams pass through unchanged."""
INDEXED_BYTES = 900_000
"""What `fitting_terms` keeps of one message's lexemes and positions: below the 1,048,575
bytes a tsvector holds (MAXSTRPOS), as the server's parser may lower a term into a few more
bytes than counted here."""
LONGEST_LEXEME = 2047
"""Bytes in the longest lexeme a tsvector holds (the server skips longer words)."""
POSITIONS_KEPT = 256
"""Positions a tsvector keeps per lexeme (the server drops the rest)."""
_TRUSTED = trusted_entry("w")
"""An entry (`w`) this role, its session's owner or its message's writer wrote (p027):
another's reads as missing (its message is indexed again: store.recall.index_untrusted_words)."""


def token_count(terms: str) -> int:
    """The tokens FTS5 counts in an index entry: BM25's length of a message."""
    return len(_TOKEN.findall(terms))


def bm25_weight(found: int, length: int, average: float) -> float:
    """A term's BM25 in a message without its IDF: said `found` times in `length` tokens."""
    return found * (K1 + 1) / (found + K1 * (1 - B + B * length / average))


class PostgresWords:
    """The word-index methods of `Backend`, for PostgreSQL."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        raise NotImplementedError

    def _value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    @property
    def in_transaction(self) -> bool:
        raise NotImplementedError

    def index_words(self, entries: Sequence[tuple[int, str]]) -> None:
        if not entries:
            return
        # One statement for the batch: its trigger updates the statistics row once (each
        # update of one row in a transaction leaves a version the next one walks past).
        self.execute(
            "INSERT INTO message_words (message_id, session_id, terms, tokens)"
            f" SELECT m.id, m.session_id, to_tsvector('{TEXT_SEARCH}', e.terms), e.tokens"
            " FROM unnest(?::bigint[], ?::text[], ?::bigint[]) AS e(id, terms, tokens)"
            " JOIN messages m ON m.id = e.id"
            " ON CONFLICT (message_id) DO UPDATE SET terms = excluded.terms,"
            " tokens = excluded.tokens",
            [[message_id for message_id, _ in entries],
             [fitting_terms(text) for _, text in entries],
             [token_count(text) for _, text in entries]])

    def unindex_words(self, message_ids: Sequence[int]) -> None:
        self.execute("DELETE FROM message_words WHERE message_id = ANY(?)", [list(message_ids)])

    def unindex_session_words(self, session_ids: Sequence[int]) -> None:
        # Through the session's index, not a list of its message ids sent over the wire.
        self.execute("DELETE FROM message_words WHERE session_id = ANY(?)", [list(session_ids)])

    def forget_erased_words(self) -> None:
        """Reclaim erased entries' space, so their terms leave the table's pages.

        VACUUM cannot run inside a transaction; within one the autovacuum does it later.
        """
        if not self.in_transaction:
            self.execute("VACUUM message_words")

    def count_words_matches(self, terms: Sequence[str], most: int) -> list[int]:
        return [int(n) for n in self._counted(terms, most)] if terms else []

    def count_words_and_entries(self, terms: Sequence[str],
                                most: int) -> tuple[list[int], int]:
        newest, *found = self._counted(terms, most, "(SELECT max(id) FROM messages)")
        return [int(n) for n in found], int(newest or 0)

    def _counted(self, terms: Sequence[str], most: int, *first: str) -> Sequence[Any]:
        """The columns `first`, then each term's index entries up to `most` + 1, in one
        statement."""
        counts = [f"(SELECT count(*) FROM (SELECT 1 FROM message_words w"
                  f" WHERE terms @@ {_term_query(t)} AND {_TRUSTED} LIMIT ?) AS found)"
                  for t in terms]
        return self.execute("SELECT " + ", ".join([*first, *counts]),
                            [v for t in terms for v in (_term_value(t), most + 1)]).fetchone()

    def session_word_counts(self, terms: Sequence[str], session_id: int,
                            most: int) -> SessionWords | None:
        own, readable = self.execute(
            "SELECT (SELECT entries FROM word_statistics WHERE session_id = ?),"
            " (SELECT coalesce(sum(entries), 0) FROM word_statistics"
            " WHERE session_id IN (SELECT id FROM sessions))", [session_id]).fetchone()
        if own is not None and own >= int(readable):
            return None
        if not own:
            return SessionWords((0,) * len(terms), 0)
        # One statement counts up to COUNTED_TOGETHER terms (a Chinese question has a
        # dozen or more; PostgreSQL's select list holds at most 1,664).
        counts: list[int] = []
        for start in range(0, len(terms), COUNTED_TOGETHER):
            chunk = terms[start:start + COUNTED_TOGETHER]
            row = self.execute("SELECT " + ", ".join(
                "(SELECT count(*) FROM (SELECT 1 FROM message_words w WHERE session_id = ?"
                f" AND terms @@ {_term_query(t)} AND {_TRUSTED} LIMIT ?) AS found)"
                for t in chunk),
                [v for t in chunk for v in (session_id, _term_value(t), most + 1)]).fetchone()
            counts += [int(n) for n in row]
        return SessionWords(tuple(counts), int(own))

    def session_word_scores(self, terms: Sequence[WeightedTerm], session_id: int,
                            before_turn: int, limit: int) -> list[tuple[int, float]]:
        _, average = self._word_totals()
        scores: dict[int, float] = {}
        for weighted in terms:
            lexemes = self._lexemes([weighted.term])
            if not lexemes:
                continue
            query = " || ".join("?::tsquery" for _ in lexemes)
            for position, length, found in self.execute(
                    "SELECT m.position, w.tokens, sum(cardinality(u.positions))"
                    f" FROM (SELECT {query} AS query) AS q, message_words w"
                    " JOIN messages m ON m.id = w.message_id, unnest(w.terms) AS u"
                    " WHERE w.terms @@ q.query AND w.session_id = ? AND m.superseded = 0"
                    f" AND m.turn < ? AND {_TRUSTED} AND {_LEXEME_MATCHES}"
                    " GROUP BY m.position, w.tokens",
                    [*map(_tsquery, lexemes), session_id, before_turn, *_wanted(lexemes)]):
                share = 1.0 if weighted.index_count is None else bm25_weight(
                    int(found), int(length), average)
                scores[int(position)] = scores.get(int(position), 0.0) + weighted.weight * share
        return best_first(scores, limit)

    def word_scores(self, terms: Sequence[str], session_id: int | None,
                    before_turn: int | None, limit: int) -> list[tuple[int, int, float]]:
        """BM25 exactly as SQLite's FTS5 computes it (k1 = 1.2, b = 0.75, the same IDF floor),
        over every entry this role reads (one role: every entry), so both backends rank alike.

        Each matching entry is read once, as FTS5's BM25 ranking does: the caller keeps
        the search to rare terms (fts.rare_terms), which bounds how many there are.
        """
        lexemes = self._lexemes(terms)
        if not lexemes:
            return []
        entries, average = self._word_totals()
        if not entries:
            return []
        idf = {}
        for lexeme in lexemes:
            hits = self.count_lexeme(lexeme)
            idf[lexeme] = max(math.log((entries - hits + 0.5) / (hits + 0.5)), 1e-6)
        query = " || ".join("?::tsquery" for _ in lexemes)
        where, params = match_conditions("w.session_id", session_id, before_turn)
        rows = self.execute(
            "SELECT m.id, m.position, w.tokens, u.lexeme, cardinality(u.positions)"
            f" FROM (SELECT {query} AS query) AS q, message_words w"
            " JOIN messages m ON m.id = w.message_id, unnest(w.terms) AS u"
            f" WHERE w.terms @@ q.query AND {where} AND {_TRUSTED} AND {_LEXEME_MATCHES}",
            [*map(_tsquery, lexemes), *params, *_wanted(lexemes)])
        # A prefix's hits are those of every lexeme it starts, counted as one term (FTS5).
        said: dict[tuple[int, int, str], tuple[int, int]] = {}
        for message_id, position, length, lexeme, found in rows:
            for wanted in _served(lexeme, lexemes):
                key = (int(message_id), int(position), wanted)
                said[key] = (int(length), said.get(key, (0, 0))[1] + int(found))
        scores: dict[tuple[int, int], float] = {}
        for (message_id, position, wanted), (length, found) in said.items():
            scores[message_id, position] = scores.get((message_id, position), 0.0) + idf[
                wanted] * bm25_weight(found, length, average)
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0][0]))[:limit]
        return [(message_id, position, score) for (message_id, position), score in best]

    def newest_word_matches(self, terms: Sequence[str], limit: int,
                            session_id: int | None = None) -> list[int]:
        lexemes = self._lexemes(terms)
        if not lexemes:
            return []
        query = " || ".join("?::tsquery" for _ in lexemes)
        if session_id is None:
            rows = self.execute(
                "SELECT m.id FROM message_words w JOIN messages m ON m.id = w.message_id"
                f" WHERE w.terms @@ ({query}) AND m.superseded = 0 AND {_TRUSTED}"
                " ORDER BY w.message_id DESC LIMIT ?", [*map(_tsquery, lexemes), limit])
            return [int(message_id) for (message_id,) in rows]
        # The session's messages from its last turn back (its (session, turn) index), each
        # looked up by key: words this common are met within the first few, where a read
        # of the words' index would fetch every message holding them.
        rows = self.execute(
            "SELECT m.id FROM messages m JOIN message_words w ON w.message_id = m.id"
            f" WHERE m.session_id = ? AND m.superseded = 0 AND w.terms @@ ({query})"
            f" AND {_TRUSTED} ORDER BY m.turn DESC, m.id DESC LIMIT ?",
            [session_id, *map(_tsquery, lexemes), limit])
        return [int(message_id) for (message_id,) in rows]

    def _word_totals(self) -> tuple[int, float]:
        """The entries BM25 counts and their average length in tokens: per session (p007),
        the totals of the sessions this role reads, no one else's. Summed as numeric, never
        cast back to bigint: the sessions others share with it cannot overflow the sum."""
        entries, tokens = (int(total) for total in self.execute(
            "SELECT coalesce(sum(entries), 0), coalesce(sum(tokens), 0)"
            " FROM word_statistics WHERE session_id IN (SELECT id FROM sessions)").fetchone())
        return entries, (tokens / entries if entries else 1.0)

    def _lexemes(self, terms: Sequence[str]) -> list[str]:
        """The distinct stemmed lexemes of `terms`, in order (stop words have none)."""
        rows = self.execute(
            f"SELECT tsvector_to_array(to_tsvector('{TEXT_SEARCH}', t)) FROM unnest(?::text[])"
            " WITH ORDINALITY AS x(t, i) ORDER BY i", [list(terms)]).fetchall()
        # A prefix term (fts.is_prefix_term) stays itself: _tsquery makes it a prefix.
        return list(dict.fromkeys(
            lexeme for term, (found,) in zip(terms, rows, strict=True)
            for lexeme in ([term] if fts.is_prefix_term(term) else found)))

    def count_lexeme(self, lexeme: str) -> int:
        return int(self._value("SELECT count(*) FROM message_words w"
                               f" WHERE terms @@ ?::tsquery AND {_TRUSTED}",
                               [_tsquery(lexeme)]))


def fitting_terms(text: str) -> str:
    """The index terms of `text` (fts.index_text) that fit one tsvector, so a message of any
    length is stored and found by its words: every occurrence of each distinct term, in
    order of first use, while they fit; a message too long (150,000 Chinese characters, or
    100,000 distinct words) is indexed by its first terms only, and a term too long for a
    lexeme is left out (SQLite's FTS5 has neither limit)."""
    if len(text) * 9 <= INDEXED_BYTES:  # a character costs at most 9 bytes (see below)
        return text
    terms = text.split()
    occurrences: dict[str, int] = {}
    for term in terms:
        occurrences[term] = occurrences.get(term, 0) + 1
    used = 0
    kept: set[str] = set()
    for term, count in occurrences.items():
        # Each lexeme its bytes (aligned to 2), a count of positions and 2 bytes a position;
        # a term the parser splits at `_` costs that for each part.
        parts = [len(part.encode()) for part in term.split("_") if part]
        if any(size > LONGEST_LEXEME for size in parts):
            continue
        cost = sum(size + 1 + 2 + 2 * min(count, POSITIONS_KEPT) for size in parts)
        if used + cost > INDEXED_BYTES:
            continue
        used += cost
        kept.add(term)
    if len(kept) == len(occurrences):
        return text
    return " ".join(term for term in terms if term in kept)


def _tsquery(lexeme: str) -> str:
    """A one-lexeme tsquery, quoted so that no character in it is an operator; a prefix
    term (fts.is_prefix_term) as a prefix query, as on SQLite."""
    if fts.is_prefix_term(lexeme):
        return _tsquery(lexeme[0]) + ":*"
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _term_query(term: str) -> str:
    """The tsquery matching a search term, with one parameter: `_term_value(term)`."""
    return "?::tsquery" if fts.is_prefix_term(term) else f"plainto_tsquery('{TEXT_SEARCH}', ?)"


def _term_value(term: str) -> str:
    return _tsquery(term) if fts.is_prefix_term(term) else term


_LEXEME_MATCHES = "(u.lexeme = ANY(?) OR left(u.lexeme, 1) = ANY(?))"
"""An indexed lexeme that is one of the query's, or starts with one of its prefixes."""


def _wanted(lexemes: Sequence[str]) -> list[list[str]]:
    """The parameters of `_LEXEME_MATCHES`: the lexemes, and the prefixes' characters."""
    return [list(lexemes), [lexeme[0] for lexeme in lexemes if fts.is_prefix_term(lexeme)]]


def _served(lexeme: str, wanted: Sequence[str]) -> list[str]:
    """The query lexemes an indexed `lexeme` counts for: itself, and the prefix it starts."""
    served = [lexeme] if lexeme in wanted else []
    if lexeme[:1] + fts.PREFIX in wanted:
        served.append(lexeme[:1] + fts.PREFIX)
    return served
