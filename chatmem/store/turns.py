"""Turns as they were sent: a completed turn commits with its messages, a failed one alone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatmem.errors import NotFound, StoreError
from chatmem.store import contexts, rendered, steps
from chatmem.store.records import TurnRecord
from chatmem.store.sessions import SessionTables


class TurnTables(SessionTables):
    @property
    def _failures(self) -> tuple[type[Exception], ...]:
        """What stops a turn from being stored: the store's errors and the driver's."""
        return (StoreError, *self.db.errors)

    def _next_turn_number(self, session_id: int) -> int:
        return int(
            self._value("SELECT coalesce(max(number), 0) + 1 FROM turns WHERE session_id = ?",
                        [session_id])
        )

    def commit_turn(self, turn: TurnRecord, *, sent_at: str | None = None,
                    replied_at: str | None = None,
                    message_tokens: tuple[int, int] | None = None) -> TurnRecord:
        """Store a completed turn: user message, reply and turn row, all or nothing.

        The user message is stamped when it was sent (`sent_at`), the reply when it ended
        (`replied_at`, default now); a replayed transcript passes its own times.
        `message_tokens` are the user message's and the reply's token counts under
        `turn.tokenizer`, stored with them so that no later read has to write them.
        """
        if turn.status != "ok" or turn.reply is None:
            raise StoreError("only a completed turn with a reply can be committed")
        try:
            with self.write():
                user_id, assistant_id = steps.append_messages(
                    self.db, turn.session_id,
                    [{"role": "user", "content": turn.input, "ts": sent_at},
                     {"role": "assistant", "content": turn.reply, "ts": replied_at}],
                    self.now)
                turn.user_message_id, turn.assistant_message_id = user_id, assistant_id
                turn.history_turn = self.turn_count(turn.session_id)
                if message_tokens is not None and turn.tokenizer:
                    counts = dict(zip((user_id, assistant_id), message_tokens, strict=True))
                    steps.save_token_counts(self.db, counts, turn.tokenizer)
                self._insert_turn(turn)
        except self._failures as e:
            turn.user_message_id = turn.assistant_message_id = turn.history_turn = None
            raise StoreError(f"the turn was not stored: {e}") from None
        return turn

    def record_turn(self, turn: TurnRecord) -> TurnRecord:
        """Store a failed or cancelled turn: the turn row only, nothing enters memory."""
        try:
            with self.write():
                self._insert_turn(turn)
        except self._failures as e:
            raise StoreError(f"the turn was not recorded: {e}") from None
        return turn

    def _insert_turn(self, turn: TurnRecord) -> None:
        turn.number = self._next_turn_number(turn.session_id)
        turn.created_at = turn.created_at or self.now()
        stored = contexts.compact(self.db, turn.session_id, turn.tokenizer, turn.context)
        row = turn.to_row(stored)
        row["rendered_prompt"], row["rendered"] = rendered.to_columns(
            self.db, turn.session_id, stored, turn.rendered_prompt)
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        turn.id = steps.insert_id(self.db, f"INSERT INTO turns ({columns}) VALUES ({marks})",
                                 list(row.values()))

    def turns(self, session_id: int, status: str | None = None) -> list[TurnRecord]:
        sql = "SELECT * FROM turns WHERE session_id = ?"
        params: list[Any] = [session_id]
        if status:
            sql += " AND status = ?"
            params.append(status)
        return [self._turn_record(r) for r in self._rows(sql + " ORDER BY number", params)]

    def turn(self, session_id: int, number: int | None = None) -> TurnRecord:
        """Turn `number` of a session, or its last turn."""
        if number is None:
            rows = self._rows(
                "SELECT * FROM turns WHERE session_id = ? ORDER BY number DESC LIMIT 1",
                [session_id],
            )
        else:
            rows = self._rows(
                "SELECT * FROM turns WHERE session_id = ? AND number = ?", [session_id, number]
            )
        if not rows:
            which = "no turns" if number is None else f"no turn {number}"
            raise NotFound(f"session {self.session_by_id(session_id).name!r} has {which}")
        return self._turn_record(rows[0])

    def _turn_record(self, row: Mapping[str, Any]) -> TurnRecord:
        record = TurnRecord.from_row(row)
        record.context = contexts.expand(self.db, record.session_id, record.tokenizer,
                                         record.context)
        record.rendered_prompt = rendered.from_columns(
            self.db, record.session_id, record.rendered_prompt, row.get("rendered"),
            f"turn {record.number}")
        return record
