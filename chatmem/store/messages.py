"""Append-only messages, their full-text index rows and cached token counts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chatmem import fts
from chatmem.store.connection import Connection
from chatmem.store.recall import pause
from chatmem.store.records import MessageRecord


class MessageTables(Connection):
    def turn_count(self, session_id: int) -> int:
        return int(
            self._value("SELECT max(turn) FROM messages WHERE session_id = ?", [session_id]) or 0
        )

    def messages(
        self, session_id: int, first_turn: int = 1, last_turn: int | None = None
    ) -> list[MessageRecord]:
        sql = "SELECT * FROM messages WHERE session_id = ? AND turn >= ?"
        params: list[Any] = [session_id, first_turn]
        if last_turn is not None:
            sql += " AND turn <= ?"
            params.append(last_turn)
        return [MessageRecord.from_row(r) for r in self._rows(sql + " ORDER BY position", params)]

    def _append_messages(
        self, session_id: int, messages: Iterable[Mapping[str, Any]]
    ) -> list[int]:
        """Insert messages inside the caller's transaction; returns their ids."""
        # Turns never decrease with position: the last message holds both maxima, and
        # the (session_id, position) index finds it without reading the session.
        row = self.db.execute(
            "SELECT position, turn, created_at FROM messages WHERE session_id = ?"
            " ORDER BY position DESC LIMIT 1",
            [session_id],
        ).fetchone()
        position, turn, last_time = row or (0, 0, None)
        ids = []
        for message in messages:
            position += 1
            if message["role"] == "user" or turn == 0:
                turn += 1
            created_at = message.get("ts") or self.now()
            message_id = self._insert(
                "INSERT INTO messages (session_id, position, turn, role, content, external_id,"
                " created_at, gap_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [session_id, position, turn, message["role"], message["content"],
                 message.get("id"), created_at, pause(last_time, created_at)],
            )
            last_time = created_at
            self.db.index_words(message_id, fts.index_text(message["content"]))
            ids.append(message_id)
        self.db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?",
                        [self.now(), session_id])
        return ids

    def import_messages(self, session_id: int, messages: Iterable[Mapping[str, Any]]) -> list[int]:
        with self.write():
            return self._append_messages(session_id, messages)

    # -- token count cache --------------------------------------------------

    def cached_token_counts(self, message_ids: Iterable[int], tokenizer: str) -> dict[int, int]:
        ids = list(message_ids)
        counts: dict[int, int] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for message_id, tokens in self.db.execute(
                f"SELECT message_id, tokens FROM token_counts WHERE tokenizer = ?"
                f" AND message_id IN ({marks})",
                [tokenizer, *chunk],
            ):
                counts[message_id] = tokens
        return counts

    def _save_token_counts(self, counts: Mapping[int, int], tokenizer: str) -> None:
        """Store counts inside the caller's transaction (a turn's own write path)."""
        self.db.executemany(
            "INSERT INTO token_counts (message_id, tokenizer, tokens) VALUES (?, ?, ?)"
            " ON CONFLICT (message_id, tokenizer) DO UPDATE SET tokens = excluded.tokens",
            [(mid, tokenizer, n) for mid, n in counts.items()],
        )
