"""Purge: every stored copy of a forgotten text replaced by a marker.

Messages are append-only, and purge is the one exception the user asks for
by name (`facts forget --purge`): a fact's value is also in the message it was
said in, in the turns that sent that message, in summaries, pins and the
full-text index. Each copy becomes `[forgotten]`; vectors and token counts of
changed messages are dropped (recomputed on demand). The caller then rewrites
the file (`vacuum`) so no old page keeps the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chatmem import fts
from chatmem.store.connection import Connection
from chatmem.store.records import FactRecord, json_text

FORGOTTEN = "[forgotten]"
MIN_REDACTED_CHARACTERS = 2
"""A shorter value (a digit, a letter) is in too many words to be searched out safely."""

# (table, text columns, JSON columns), for tables keyed by session_id.
_SESSION_TABLES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("turns", ("input", "reply", "rendered_prompt", "error"), ("context", "rendered")),
    ("summaries", ("text",), ("anchors", "dropped_anchors")),
    ("strategy_state", (), ("value",)),
    ("session_prompts", ("system",), ()),
    ("probes", ("question",), ("expect_text",)),
)


@dataclass
class Redaction:
    """How many stored copies a purge replaced, by where they were."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, where: str, n: int = 1) -> None:
        if n:
            self.counts[where] = self.counts.get(where, 0) + n

    def describe(self) -> str:
        """`4 messages, 2 turns.input`: where copies were replaced; empty when none were."""
        return ", ".join(f"{n} {where}" for where, n in self.counts.items())


class RedactionTables(Connection):
    def redact_fact_value(self, fact: FactRecord, earlier: Sequence[str] = ()) -> Redaction:
        """Redact a purged fact's value, and the `earlier` values it had, where its owner's
        conversations hold them. A session fact: that session. A user fact: every session
        of that user.
        """
        if fact.scope == "session" and fact.session_id is not None:
            sessions = [fact.session_id]
        else:
            sessions = [r[0] for r in self.db.execute(
                "SELECT id FROM sessions WHERE user IS ?", [fact.user]).fetchall()]
        done = Redaction()
        for value in dict.fromkeys([fact.value, *earlier]):
            for where, n in self.redact_text(value, sessions, fact.user).counts.items():
                done.add(where, n)
        return done

    def user_facts_from(self, session_id: int) -> list[str]:
        """Keys of live user-profile facts first said in this session."""
        return [r[0] for r in self.db.execute(
            "SELECT f.key FROM facts f JOIN messages m ON m.id = f.source_message_id"
            " WHERE f.scope = 'user' AND f.deleted_at IS NULL AND m.session_id = ?"
            " ORDER BY f.id", [session_id]).fetchall()]

    def redact_text(self, text: str, session_ids: Sequence[int], user: str | None) -> Redaction:
        """Replace `text` (any case) by [forgotten] in the given sessions and the user's facts."""
        done = Redaction()
        if len(text.strip()) < MIN_REDACTED_CHARACTERS or not session_ids:
            return done
        pattern = re.compile(re.escape(text), re.IGNORECASE)
        sessions = ", ".join(str(int(i)) for i in session_ids)
        with self.write():
            self._redact_messages(pattern, text, sessions, done)
            for table, texts, jsons in _SESSION_TABLES:
                if not self._table_exists(table):
                    continue  # a table a later migration adds
                for column in (*texts, *jsons):
                    self._redact_column(table, column, column in jsons, pattern, text,
                                        f"session_id IN ({sessions})", [], done)
            self._redact_column("sessions", "system", False, pattern, text,
                                f"id IN ({sessions})", [], done)
            owner = f"(session_id IN ({sessions}) OR (scope = 'user' AND user IS ?))"
            self._redact_column("facts", "value", False, pattern, text, owner, [user], done)
            if self._table_exists("fact_history"):
                self._redact_column("fact_history", "value", False, pattern, text,
                                    f"fact_id IN (SELECT id FROM facts WHERE {owner})", [user],
                                    done)
        return done

    def _redact_messages(self, pattern: re.Pattern[str], text: str, sessions: str,
                         done: Redaction) -> None:
        rows = self.db.execute(
            f"SELECT id, content FROM messages WHERE session_id IN ({sessions})"
            " AND instr(lower(content), lower(?)) > 0", [text]).fetchall()
        for message_id, content in rows:
            new = pattern.sub(FORGOTTEN, content)
            if new == content:
                continue
            self.db.execute("UPDATE messages SET content = ? WHERE id = ?", [new, message_id])
            self.db.execute("DELETE FROM messages_fts WHERE rowid = ?", [message_id])
            self.db.execute("INSERT INTO messages_fts (rowid, terms) VALUES (?, ?)",
                            [message_id, fts.index_text(new)])
            self.db.execute("DELETE FROM token_counts WHERE message_id = ?", [message_id])
            done.add("messages")
        if rows and self._table_exists("message_vectors"):
            # A message's context vector encodes its neighbours: drop the sessions' vectors.
            self.db.execute("DELETE FROM message_vectors WHERE message_id IN"
                            f" (SELECT id FROM messages WHERE session_id IN ({sessions}))")
        if rows:
            # FTS5 keeps deleted terms until its segments merge.
            self.db.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")

    def _redact_column(self, table: str, column: str, is_json: bool, pattern: re.Pattern[str],
                       text: str, where: str, params: list[Any], done: Redaction) -> None:
        rows = self.db.execute(
            f"SELECT rowid, {column} FROM {table} WHERE {where} AND"
            f" (instr(lower({column}), lower(?)) > 0 OR instr(lower({column}), lower(?)) > 0)",
            [*params, text, _json_form(text)]).fetchall()
        for rowid, value in rows:
            new = _replace_json(value, pattern) if is_json else pattern.sub(FORGOTTEN, value)
            if new != value:
                self.db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", [new, rowid])
                done.add(f"{table}.{column}")

    def _table_exists(self, name: str) -> bool:
        return bool(self._value("SELECT 1 FROM sqlite_master WHERE name = ?", [name]))


def _json_form(text: str) -> str:
    """How `text` is spelled inside stored JSON (quotes and backslashes escaped)."""
    return json_text(text)[1:-1]


def _replace_json(value: str, pattern: re.Pattern[str]) -> str:
    try:
        data = json.loads(value)
    except ValueError:
        return pattern.sub(FORGOTTEN, value)
    return json_text(_replace_in(data, pattern))


def _replace_in(data: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(data, str):
        return pattern.sub(FORGOTTEN, data)
    if isinstance(data, list):
        return [_replace_in(item, pattern) for item in data]
    if isinstance(data, dict):
        return {key: _replace_in(item, pattern) for key, item in data.items()}
    return data
