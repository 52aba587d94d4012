"""What recall reads and writes: message positions and times, and message vectors.

Vectors are stored per (model, message) as float16 blobs: the message's own
vector and its context vector (the previous message and this one embedded
together). Reads are incremental (`after_id`), so a session's recall index is
loaded once and then extended by the messages committed since.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from chatmem import fts
from chatmem.store.connection import Connection
from chatmem.store.records import MessageRecord


@dataclass(frozen=True)
class RecallRow:
    """A message as recall ranks it: where and when it is, not what it says."""

    id: int
    position: int
    turn: int
    role: str
    created_at: str


@dataclass(frozen=True)
class VectorRow:
    message_id: int
    vector: bytes
    context_vector: bytes


@dataclass(frozen=True)
class PendingText:
    """A message without a vector for some model, with the message before it."""

    message_id: int
    content: str
    previous: str | None


class RecallTables(Connection):
    def recall_rows(self, session_id: int, *, after_id: int = 0) -> list[RecallRow]:
        """The session's messages with an id above `after_id`, in conversation order."""
        return [
            RecallRow(*row) for row in self.db.execute(
                # `+session_id`: walk the ids after `after_id` (the primary key),
                # not the whole session through its (session, turn) index.
                "SELECT id, position, turn, role, created_at FROM messages"
                " WHERE +session_id = ? AND id > ? ORDER BY position",
                [session_id, after_id],
            )
        ]

    def messages_by_id(self, ids: Iterable[int]) -> dict[int, MessageRecord]:
        wanted = list(ids)
        found: dict[int, MessageRecord] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for row in self._rows(f"SELECT * FROM messages WHERE id IN ({marks})", chunk):
                found[row["id"]] = MessageRecord.from_row(row)
        return found

    def match_scores(self, session_id: int, query: str, *, before_turn: int,
                     limit: int) -> dict[int, float]:
        """Message id → BM25 (higher is better) of the session's best `limit` matches of
        `query` before `before_turn`: ids and scores only, as recall ranks them itself."""
        expression = fts.match_query(query)
        if expression is None:
            return {}
        rows = self.db.execute(
            "SELECT m.id, bm25(messages_fts) AS score FROM messages_fts"
            " JOIN messages m ON m.id = messages_fts.rowid"
            " WHERE messages_fts MATCH ? AND m.session_id = ? AND m.turn < ?"
            " ORDER BY score LIMIT ?",
            [expression, session_id, before_turn, limit],
        )
        return {message_id: -score for message_id, score in rows}

    def vector_rows(self, session_id: int, model: str, *, after_id: int = 0) -> list[VectorRow]:
        return [
            VectorRow(*row) for row in self.db.execute(
                "SELECT v.message_id, v.vector, v.context_vector FROM message_vectors v"
                " JOIN messages m ON m.id = v.message_id"
                " WHERE v.model = ? AND m.session_id = ? AND v.message_id > ?"
                " ORDER BY v.message_id",
                [model, session_id, after_id],
            )
        ]

    def texts_without_vectors(
        self, model: str, session_id: int | None = None, *, limit: int | None = None,
        after_id: int = 0,
    ) -> list[PendingText]:
        """Messages (of one session, or all) with no vector for `model` yet, oldest first;
        `after_id` skips those already checked."""
        sql = (
            "SELECT m.id, m.content, (SELECT p.content FROM messages p"
            "  WHERE p.session_id = m.session_id AND p.position = m.position - 1)"
            " FROM messages m WHERE NOT EXISTS (SELECT 1 FROM message_vectors v"
            "  WHERE v.model = ? AND v.message_id = m.id) AND m.id > ?"
        )
        params: list[object] = [model, after_id]
        if session_id is not None:
            sql += " AND +m.session_id = ?" if after_id else " AND m.session_id = ?"
            params.append(session_id)
        sql += " ORDER BY m.id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [PendingText(*row) for row in self.db.execute(sql, params)]

    def count_without_vectors(self, model: str, session_id: int | None = None) -> int:
        sql = ("SELECT count(*) FROM messages m WHERE NOT EXISTS (SELECT 1 FROM message_vectors v"
               " WHERE v.model = ? AND v.message_id = m.id)")
        params: list[object] = [model]
        if session_id is not None:
            sql += " AND m.session_id = ?"
            params.append(session_id)
        return int(self._value(sql, params) or 0)

    def save_vectors(self, model: str, dimensions: int, rows: Iterable[VectorRow]) -> None:
        """Store vectors; a message deleted meanwhile is skipped, not an error."""
        with self.write():
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO message_vectors"
                " (message_id, model, dimensions, vector, context_vector)"
                " SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM messages WHERE id = ?)",
                [(r.message_id, model, dimensions, r.vector, r.context_vector, r.message_id)
                 for r in rows],
            )

    def vector_models(self) -> dict[str, int]:
        """Embedding model → how many messages have its vectors."""
        return {
            model: count for model, count in self.db.execute(
                "SELECT model, count(*) FROM message_vectors GROUP BY model ORDER BY model")
        }


def rank_texts(texts: Sequence[str], query: str) -> dict[int, float]:
    """BM25 of each text against `query` (index → score, higher is better), no file needed.

    The same FTS5 index and tokenizer as a history file's, in memory, so a
    conversation held in memory (tests, pure builds) ranks exactly as a stored one.
    """
    expression = fts.match_query(query)
    if expression is None or not texts:
        return {}
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(terms, tokenize='porter unicode61')")
        conn.executemany("INSERT INTO t (rowid, terms) VALUES (?, ?)",
                         [(i, fts.index_text(text)) for i, text in enumerate(texts)])
        return {rowid: -score for rowid, score in conn.execute(
            "SELECT rowid, bm25(t) FROM t WHERE t MATCH ?", [expression])}
    finally:
        conn.close()
