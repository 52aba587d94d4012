"""Full-text search over messages, bounded by its rarer terms however long the history."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from chatmem import fts
from chatmem.store.connection import Connection
from chatmem.store.records import MessageRecord

COMMON_FLOOR = 200
"""Below this many messages containing it, a term is always searched."""
COMMON_CAP = 1000
"""Above this many messages containing it, a term is never searched: it bounds a search's cost."""


class SearchTables(Connection):
    def search_messages(
        self, session_id: int, query: str, *, before_turn: int | None = None, limit: int = 20
    ) -> Iterator[tuple[MessageRecord, float]]:
        """Messages matching any distinctive term of `query`, best BM25 score first.

        The cost is bounded by the terms kept, not by the history: a term found
        in very many messages is left out (see `distinctive_terms`), and the
        ranking, sort and limit all happen inside SQLite.
        """
        expression = fts.match_terms(self.distinctive_terms(fts.query_terms(query)))
        if expression is None:
            return iter(())
        sql = (
            "SELECT m.*, bm25(messages_fts) AS score FROM messages_fts"
            " JOIN messages m ON m.id = messages_fts.rowid"
            " WHERE messages_fts MATCH ? AND m.session_id = ?"
        )
        params: list[Any] = [expression, session_id]
        if before_turn is not None:
            sql += " AND m.turn < ?"
            params.append(before_turn)
        sql += " ORDER BY score, m.position LIMIT ?"
        params.append(limit)
        rows = self._rows(sql, params)
        # bm25() is lower-is-better; report the usual higher-is-better score.
        return (
            (MessageRecord.from_row(r), -r["score"])
            for r in rows
        )

    def distinctive_terms(self, terms: Iterable[str]) -> list[str]:
        """The terms found in at least one message and in at most `common_limit()` of them.

        An IDF cut: a term in a large share of the messages barely changes a
        BM25 ranking, yet FTS5 reads its whole posting list to score it (bm25()
        counts the documents of every phrase). Leaving it out bounds a search
        by the rarer terms' postings. Each count stops at the limit, so this
        check costs at most the limit per term however long the history.
        """
        limit = self.common_limit()
        kept = []
        for term in terms:
            found = self._value(
                "SELECT count(*) FROM (SELECT rowid FROM messages_fts"
                " WHERE messages_fts MATCH ? LIMIT ?)", [fts.quote_term(term), limit + 1],
            )
            if 0 < found <= limit:
                kept.append(term)
        return kept

    def common_limit(self) -> int:
        """Messages a term may appear in and still be searched: a tenth of them, within
        COMMON_FLOOR..COMMON_CAP (small histories keep every term; large ones bound the work)."""
        total = int(self._value("SELECT coalesce(max(id), 0) FROM messages"))
        return min(COMMON_CAP, max(COMMON_FLOOR, total // 10))
