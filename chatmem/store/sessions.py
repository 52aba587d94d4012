"""Sessions, their append-only messages, turns, token counts and the full-text index."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from contextlib import suppress
from typing import Any

from chatmem import fts
from chatmem.errors import NotFound, StoreError, UsageError
from chatmem.store import contexts, rendered
from chatmem.store.connection import Connection
from chatmem.store.recall import pause
from chatmem.store.records import (
    MessageRecord,
    SessionRecord,
    TurnRecord,
    check_session_name,
    json_text,
    stored_json,
)
from chatmem.text import is_valid

COMMON_FLOOR = 200
"""Below this many messages containing it, a term is always searched."""
COMMON_CAP = 1000
"""Above this many messages containing it, a term is never searched: it bounds a search's cost."""


class SessionTables(Connection):
    # -- sessions ---------------------------------------------------------

    def create_session(
        self,
        name: str,
        strategy: str,
        params: Mapping[str, Any] | None = None,
        *,
        provider: str | None = None,
        model: str | None = None,
        system: str | None = None,
        user: str | None = None,
        tokenizer: str | None = None,
    ) -> SessionRecord:
        self._check_new_name(name)
        with self.write():
            session_id = self._insert_session(name, strategy, params or {}, provider=provider,
                                              model=model, system=system, user=user,
                                              tokenizer=tokenizer)
        return self.session_by_id(session_id)

    def find_or_create_session(
        self,
        name: str,
        strategy: str,
        params: Mapping[str, Any] | None = None,
        **fields: str | None,
    ) -> tuple[SessionRecord, bool]:
        """The named session, created unless it exists; True when this call created it.

        One transaction: two processes opening the same new session join it
        instead of one failing because the other created it first.
        """
        with self.write():
            found = self.find_session(name)
            if found is None:
                check_session_name(name)  # the one rule, for a new name only
                session_id = self._insert_session(name, strategy, params or {}, **fields)
        if found is not None:
            return found, False
        return self.session_by_id(session_id), True

    def _check_new_name(self, name: str) -> None:
        check_session_name(name)
        if self.find_session(name) is not None:
            raise StoreError(f"a session named {name!r} already exists")

    def _insert_session(
        self, name: str, strategy: str, params: Mapping[str, Any], *, provider: str | None,
        model: str | None, system: str | None, user: str | None, tokenizer: str | None = None,
    ) -> int:
        """Insert a session row inside the caller's transaction; returns its id."""
        stamp = self.now()
        try:
            cursor = self.db.execute(
                "INSERT INTO sessions (name, strategy, params, provider, model, system, user,"
                " tokenizer, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [name, strategy, json_text(dict(params)), provider, model, system, user,
                 tokenizer, stamp, stamp],
            )
        except sqlite3.IntegrityError:
            # Another process took the name since _check_new_name.
            raise StoreError(f"a session named {name!r} already exists") from None
        session_id = int(cursor.lastrowid or 0)
        self._set_prompt(session_id, 1, system)
        return session_id

    def session_names(self, session_ids: Iterable[int]) -> dict[int, str]:
        """Session id → name, for the ids that still exist."""
        ids = list(session_ids)
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        return {r["id"]: r["name"] for r in self._rows(
            f"SELECT id, name FROM sessions WHERE id IN ({marks})", ids)}

    def find_session(self, name: str) -> SessionRecord | None:
        if not is_valid(name):
            raise UsageError(f"session name {name!r} is not valid UTF-8")
        rows = self._rows("SELECT * FROM sessions WHERE name = ?", [name])
        return SessionRecord.from_row(rows[0]) if rows else None

    def session(self, name: str) -> SessionRecord:
        found = self.find_session(name)
        if found is None:
            raise NotFound(f"no session named {name!r} in {self.path}")
        return found

    def session_by_id(self, session_id: int) -> SessionRecord:
        rows = self._rows("SELECT * FROM sessions WHERE id = ?", [session_id])
        if not rows:
            raise NotFound(f"no session with id {session_id}")
        return SessionRecord.from_row(rows[0])

    def update_session(self, session_id: int, **fields: Any) -> SessionRecord:
        """Change a session's settings; returns it as now stored."""
        allowed = {"strategy", "params", "provider", "model", "system", "user", "name",
                   "tokenizer"}
        if not fields.keys() <= allowed:
            raise StoreError(f"cannot update session fields {sorted(fields.keys() - allowed)}")
        if "params" in fields:
            fields["params"] = json_text(fields["params"])
        fields["updated_at"] = self.now()
        assignments = ", ".join(f"{k} = ?" for k in fields)
        with self.write():
            if "system" in fields and fields["system"] != self.session_by_id(session_id).system:
                # The new prompt holds from the next turn on; earlier turns keep theirs.
                self._set_prompt(session_id, self.turn_count(session_id) + 1, fields["system"])
            try:
                self.db.execute(
                    f"UPDATE sessions SET {assignments} WHERE id = ?",
                    [*fields.values(), session_id],
                )
            except sqlite3.IntegrityError:
                raise StoreError(f"a session named {fields.get('name')!r} already exists") from None
        return self.session_by_id(session_id)

    def _set_prompt(self, session_id: int, from_turn: int, system: str | None) -> None:
        """Record the system prompt in effect from `from_turn` on, inside a transaction."""
        self.db.execute(
            "INSERT OR REPLACE INTO session_prompts (session_id, from_turn, system)"
            " VALUES (?, ?, ?)", [session_id, from_turn, system],
        )

    def system_prompts(self, session_id: int) -> list[tuple[int, str | None]]:
        """(first turn, system prompt) of every prompt the session used, oldest first."""
        rows = self._rows("SELECT from_turn, system FROM session_prompts WHERE session_id = ?"
                          " ORDER BY from_turn", [session_id])
        return [(r["from_turn"], r["system"]) for r in rows]

    def set_system_prompts(self, session_id: int,
                           prompts: Iterable[tuple[int, str | None]]) -> None:
        """Replace the session's prompt history (an import brings its own)."""
        with self.write():
            self.db.execute("DELETE FROM session_prompts WHERE session_id = ?", [session_id])
            for from_turn, system in prompts:
                self._set_prompt(session_id, from_turn, system)

    def system_for_turn(self, session_id: int, turn: int) -> str | None:
        """The system prompt turn `turn` was (or will be) sent with."""
        prompts = [s for first, s in self.system_prompts(session_id) if first <= turn]
        if prompts:
            return prompts[-1]
        return self.session_by_id(session_id).system

    # -- probes -------------------------------------------------------------

    def add_probes(self, session_id: int, probes: Iterable[Mapping[str, Any]]) -> int:
        """Store probe lines, each with the message position it was asked after."""
        rows = [[session_id, p["after_position"], p["question"], json_text(list(p["expect_ids"])),
                 json_text(list(p["expect_text"]))] for p in probes]
        with self.write():
            self.db.conn.executemany(
                "INSERT INTO probes (session_id, after_position, question, expect_ids,"
                " expect_text) VALUES (?, ?, ?, ?, ?)", rows)
        return len(rows)

    def probes(self, session_id: int) -> list[dict[str, Any]]:
        rows = self._rows("SELECT after_position, question, expect_ids, expect_text FROM probes"
                          " WHERE session_id = ? ORDER BY after_position, id", [session_id])
        return [{**r, "expect_ids": stored_json(r["expect_ids"], "a probe's expect_ids", "[]"),
                 "expect_text": stored_json(r["expect_text"], "a probe's expect_text", "[]")}
                for r in rows]

    def rename_session(self, name: str, new_name: str) -> SessionRecord:
        """Give a session a new name; everything it owns follows (rows point at its id)."""
        record = self.session(name)
        self._check_new_name(new_name)
        return self.update_session(record.id, name=new_name)

    def list_sessions(self) -> list[dict[str, Any]]:
        """Every session with its counts, most recently used first.

        `turns` counts the conversation's turns (forked and imported ones too);
        `requests` counts the requests recorded for it, failed and cancelled included.
        """
        rows = self._rows(
            """
            SELECT s.name, s.strategy, s.params, s.provider, s.model, s.tokenizer, s.created_at,
                   s.updated_at,
                   (SELECT count(*) FROM messages m WHERE m.session_id = s.id) AS messages,
                   (SELECT coalesce(max(m.turn), 0) FROM messages m
                    WHERE m.session_id = s.id) AS turns,
                   (SELECT count(*) FROM turns t WHERE t.session_id = s.id) AS requests
            FROM sessions s ORDER BY s.updated_at DESC, s.id DESC
            """
        )
        return [{**row, "params": stored_json(row["params"], f"session {row['name']!r}: params",
                                              "{}")} for row in rows]

    def delete_session(self, name: str) -> None:
        """Erase a session physically: messages, turns, summaries, facts, index rows."""
        record = self.session(name)
        with self.write():
            self._erase_session_rows(record.id)
            self._merge_index()

    def _erase_session_rows(self, session_id: int) -> None:
        """Delete a session inside the caller's transaction; its rows cascade (messages,
        turns, summaries, session facts, vectors, probes, state), its index rows do not."""
        self.db.execute(
            "DELETE FROM messages_fts WHERE rowid IN"
            " (SELECT id FROM messages WHERE session_id = ?)",
            [session_id],
        )
        # Earlier values of profile facts stated in this session go with it.
        self.db.execute("DELETE FROM fact_history WHERE source_session_id = ?", [session_id])
        self.db.execute("DELETE FROM sessions WHERE id = ?", [session_id])

    def _merge_index(self) -> None:
        # FTS5 only marks index entries deleted; merging the segments drops
        # the erased terms for real (secure_delete then zeroes the freed pages).
        self.db.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")

    # -- messages ---------------------------------------------------------

    def message_sessions(self, message_ids: Iterable[int]) -> dict[int, tuple[int, str]]:
        """Message id → (session id, session name), for labelling where a fact came from."""
        ids = list(message_ids)
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        rows = self._rows(
            f"SELECT m.id, s.id AS session_id, s.name FROM messages m"
            f" JOIN sessions s ON s.id = m.session_id WHERE m.id IN ({marks})",
            ids,
        )
        return {r["id"]: (r["session_id"], r["name"]) for r in rows}

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
            cursor = self.db.execute(
                "INSERT INTO messages (session_id, position, turn, role, content, external_id,"
                " created_at, gap_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [session_id, position, turn, message["role"], message["content"],
                 message.get("id"), created_at, pause(last_time, created_at)],
            )
            last_time = created_at
            message_id = cursor.lastrowid
            self.db.execute(
                "INSERT INTO messages_fts (rowid, terms) VALUES (?, ?)",
                [message_id, fts.index_text(message["content"])],
            )
            ids.append(int(message_id or 0))
        self.db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?",
                        [self.now(), session_id])
        return ids

    def import_messages(self, session_id: int, messages: Iterable[Mapping[str, Any]]) -> list[int]:
        with self.write():
            return self._append_messages(session_id, messages)

    # -- turns ------------------------------------------------------------

    def _next_turn_number(self, session_id: int) -> int:
        return int(
            self._value("SELECT coalesce(max(number), 0) + 1 FROM turns WHERE session_id = ?",
                        [session_id])
        )

    def commit_turn(self, turn: TurnRecord, *, sent_at: str | None = None,
                    replied_at: str | None = None) -> TurnRecord:
        """Store a completed turn: user message, reply and turn row, all or nothing.

        The user message is stamped when it was sent (`sent_at`), the reply when it ended
        (`replied_at`, default now); a replayed transcript passes its own times.
        """
        if turn.status != "ok" or turn.reply is None:
            raise StoreError("only a completed turn with a reply can be committed")
        try:
            with self.write():
                user_id, assistant_id = self._append_messages(
                    turn.session_id,
                    [{"role": "user", "content": turn.input, "ts": sent_at},
                     {"role": "assistant", "content": turn.reply, "ts": replied_at}],
                )
                turn.user_message_id, turn.assistant_message_id = user_id, assistant_id
                turn.history_turn = self.turn_count(turn.session_id)
                self._insert_turn(turn)
        except (sqlite3.Error, StoreError) as e:
            turn.user_message_id = turn.assistant_message_id = turn.history_turn = None
            raise StoreError(f"the turn was not stored: {e}") from None
        return turn

    def record_turn(self, turn: TurnRecord) -> TurnRecord:
        """Store a failed or cancelled turn: the turn row only, nothing enters memory."""
        try:
            with self.write():
                self._insert_turn(turn)
        except (sqlite3.Error, StoreError) as e:
            raise StoreError(f"the turn was not recorded: {e}") from None
        return turn

    def _insert_turn(self, turn: TurnRecord) -> None:
        turn.number = self._next_turn_number(turn.session_id)
        turn.created_at = turn.created_at or self.now()
        stored = contexts.compact(self.db.conn, turn.session_id, turn.tokenizer, turn.context)
        row = turn.to_row(stored)
        if turn.rendered_prompt:
            pieces = rendered.compact_stored(self.db.conn, turn.session_id, stored,
                                             turn.rendered_prompt)
            if pieces is not None:
                row["rendered_prompt"], row["rendered"] = None, json_text(pieces)
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        cursor = self.db.execute(f"INSERT INTO turns ({columns}) VALUES ({marks})",
                                 list(row.values()))
        turn.id = cursor.lastrowid

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
        record.context = contexts.expand(self.db.conn, record.session_id, record.tokenizer,
                                         record.context)
        if row.get("rendered"):
            pieces = stored_json(row["rendered"], f"turn {record.number}: rendered prompt")
            record.rendered_prompt = rendered.expand_stored(self.db.conn, record.session_id,
                                                            pieces)
        return record

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

    def save_token_counts(self, counts: Mapping[int, int], tokenizer: str) -> None:
        """Cache counts; best effort, since a read-only or busy file can still be read."""
        with suppress(StoreError), self.write():
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO token_counts (message_id, tokenizer, tokens)"
                " VALUES (?, ?, ?)",
                [(mid, tokenizer, n) for mid, n in counts.items()],
            )

    # -- full-text search ---------------------------------------------------

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
