"""Purge's SQL: rewrite every stored copy of a user's words where they were mentioned.

Messages are append-only, and purge is the one exception the user asks for
by name (`facts forget --purge`): a fact's value is also in the messages it was
said in, in the turns that sent them, in summaries, pins and the full-text
index. Which characters are a mention is decided above the store
(chatmem.privacy.mentions) and handed down as a `rewrite` function; the store
finds the rows that may hold one, applies it, and keeps the index, token
counts and vectors in step with the changed messages. The caller then
rewrites the file (`vacuum`) so no old page keeps the text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from chatmem import fts
from chatmem.store import sharing, steps
from chatmem.store.connection import Connection, fetch_rows
from chatmem.store.memory_state import profile_facts, profile_in
from chatmem.store.records import MessageRecord
from chatmem.store.stored_values import json_text
from chatmem.text import INVISIBLE

_KEYS = {"strategy_state": ("session_id", "strategy", "key"),
         "session_prompts": ("session_id", "from_turn")}
"""Primary keys of the rewritten tables that have no single `id` column."""

REWRITTEN_TOGETHER = 500
"""Rows one batch of a purge rewrites (and, for messages, indexes in one statement)."""
Rewrite = Callable[[str], str]
"""A stored text -> the same text with its mentions erased (unchanged when it has none)."""


class Place(Enum):
    """Where a purge changed stored text (one count per row)."""

    MESSAGES = "messages"
    TURNS = "turns"
    SUMMARIES = "summaries"
    ANCHORS = "anchors"
    STRATEGY_STATE = "strategy_state"
    SYSTEM_PROMPTS = "system_prompts"
    PROBES = "probes"
    FACTS = "facts"
    FACT_HISTORY = "fact_history"
    VECTORS = "vectors"


@dataclass
class Redaction:
    """The rows a purge changed, by place, and the sessions they belong to."""

    rows: dict[Place, set[Any]] = field(default_factory=dict)
    sessions: set[int] = field(default_factory=set)

    def add(self, place: Place, row: Any) -> None:
        self.rows.setdefault(place, set()).add(row)

    @property
    def counts(self) -> dict[Place, int]:
        return {place: len(rows) for place, rows in self.rows.items() if rows}


# (table, place, text columns, JSON columns), for tables keyed by session_id.
_SESSION_TABLES: tuple[tuple[str, Place, tuple[str, ...], tuple[str, ...]], ...] = (
    ("turns", Place.TURNS, ("input", "reply", "rendered_prompt", "error"),
     ("context", "rendered")),
    ("summaries", Place.SUMMARIES, ("text",), ()),
    ("summaries", Place.ANCHORS, (), ("anchors", "dropped_anchors")),
    ("strategy_state", Place.STRATEGY_STATE, (), ("value",)),
    ("session_prompts", Place.SYSTEM_PROMPTS, ("system",), ()),
    ("probes", Place.PROBES, ("question",), ("expect_text",)),
)


class RedactionTables:
    """The stored text a purge finds and rewrites (`store.redactions`)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._db = connection.db

    def profile_session_ids(self, user: str | None) -> list[int]:
        """Every session of a user profile (None: sessions without a user) this role owns:
        a session shared with it is its owner's to rewrite."""
        where, params = profile_in('"user"', user)
        ids = [r[0] for r in self._db.execute(
            f"SELECT id FROM sessions WHERE {where} ORDER BY id", params).fetchall()]
        mine = sharing.owned(self._connection, ids)
        return [i for i in ids if i in mine]

    def others_profile_sessions(self, user: str | None) -> dict[int, str]:
        """The sessions of a user profile another role owns and shares with this one, with
        their owner: a purge leaves them as they are, and says so."""
        where, params = profile_in('"user"', user)
        ids = [r[0] for r in self._db.execute(
            f"SELECT id FROM sessions WHERE {where} ORDER BY id", params).fetchall()]
        return sharing.others_sessions(self._connection, ids)

    def user_facts_from(self, session_id: int) -> list[str]:
        """Keys of live user-profile facts first said in this session."""
        return [r[0] for r in self._db.execute(
            "SELECT f.key FROM facts f JOIN messages m ON m.id = f.source_message_id"
            f" WHERE f.id IN (SELECT id FROM facts WHERE {profile_facts(self._db.own_rows)})"
            " AND f.deleted_at IS NULL AND m.session_id = ? ORDER BY f.id",
            [session_id]).fetchall()]

    def messages_containing(self, session_ids: Sequence[int], needles: Sequence[str], *,
                            beyond_ascii: bool = False) -> list[MessageRecord]:
        """Messages of the sessions that contain any of `needles` in any case, or with
        `beyond_ascii` any character beyond ASCII (a superset of those that mention them:
        Núñez, folded as search folds it, mentions Nunez), in session and position order."""
        if not session_ids or not needles:
            return []
        where, params = self._containing("content", needles, False, beyond_ascii)
        return [MessageRecord.from_row(r) for r in fetch_rows(self._db,
            f"SELECT * FROM messages WHERE session_id IN ({_ids(session_ids)}) AND {where}"
            " ORDER BY session_id, position", params)]

    def rewrite_stored_text(self, session_ids: Sequence[int], user: str | None,
                            needles: Sequence[str], rewrite: Rewrite, *,
                            beyond_ascii: bool = False) -> Redaction:
        """Apply `rewrite` to every stored text of the sessions, and of the facts of the
        sessions and of `user`'s profile, that contains one of `needles` (any case) or, with
        `beyond_ascii`, any character beyond ASCII (`messages_containing`), in one
        transaction. Changed messages get a new index entry; their token counts and their
        sessions' vectors are dropped (both are recomputed on demand, vectors by
        `chatmem index`)."""
        done = Redaction()
        if not session_ids or not needles:
            return done
        sessions = _ids(session_ids)
        found = _Found(needles, beyond_ascii)
        with self._db.write():
            self._rewrite_messages(sessions, found, rewrite, done)
            for table, place, texts, jsons in _SESSION_TABLES:
                if not self._table_exists(table):
                    continue  # a table a later migration adds
                for column in (*texts, *jsons):
                    self._rewrite_column(table, place, column, column in jsons, found,
                                         rewrite, f"session_id IN ({sessions})", [], done)
            self._rewrite_column("sessions", Place.SYSTEM_PROMPTS, "system", False, found,
                                 rewrite, f"id IN ({sessions})", [], done)
            profile, forms = profile_in('"user"', user)
            owner = (f"(session_id IN ({sessions}) OR ({profile_facts(self._db.own_rows)}"
                     f" AND {profile}))")
            # Keys too: a key may name the person ("zebulon's birthday").
            for column in ("key", "value"):
                self._rewrite_column("facts", Place.FACTS, column, False, found, rewrite,
                                     owner, forms, done)
            if self._table_exists("fact_history"):
                for column in ("key", "value"):
                    self._rewrite_column("fact_history", Place.FACT_HISTORY, column, False,
                                         found, rewrite,
                                         f"fact_id IN (SELECT id FROM facts WHERE {owner})",
                                         forms, done)
        return done

    def _rewrite_messages(self, sessions: str, found: _Found, rewrite: Rewrite,
                          done: Redaction) -> None:
        where, params = self._containing("content", found.needles, False, found.beyond_ascii)
        rows = self._db.execute(
            f"SELECT id, session_id, content FROM messages WHERE session_id IN ({sessions})"
            f" AND {where}", params).fetchall()
        changed_sessions: set[int] = set()
        rewritten: list[tuple[int, str]] = []
        for message_id, session_id, content in rows:
            new = rewrite(content)
            if new == content:
                continue
            rewritten.append((message_id, new))
            done.add(Place.MESSAGES, message_id)
            changed_sessions.add(session_id)
        # In batches, each one statement of a kind: on a server each is a round trip, and
        # each index statement updates the sessions' word statistics rows once.
        for start in range(0, len(rewritten), REWRITTEN_TOGETHER):
            batch = rewritten[start:start + REWRITTEN_TOGETHER]
            self._db.executemany("UPDATE messages SET content = ? WHERE id = ?",
                                 [(new, message_id) for message_id, new in batch])
            self._db.index_words([(message_id, fts.index_text(new)) for message_id, new in batch])
            self._db.execute("DELETE FROM token_counts WHERE message_id IN"
                             f" ({_ids(message_id for message_id, _ in batch)})")
        done.sessions |= changed_sessions
        if not changed_sessions:
            return
        steps.count_erasure(self._db, changed_sessions)
        if self._table_exists("message_vectors"):
            # A message's context vector encodes its neighbours: drop the sessions' vectors.
            changed = _ids(sorted(changed_sessions))
            if self._db.has_column("vector_cache", "digest"):
                # Nor may the erased texts be found by their digests.
                self._db.execute("DELETE FROM vector_cache WHERE message_id IN"
                                f" (SELECT id FROM messages WHERE session_id IN ({changed}))")
            for (message_id,) in self._db.execute(
                    "DELETE FROM message_vectors WHERE message_id IN"
                    f" (SELECT id FROM messages WHERE session_id IN ({changed}))"
                    " RETURNING message_id").fetchall():
                done.add(Place.VECTORS, message_id)
        # The index may keep a replaced text's terms until told to forget them.
        self._db.forget_erased_words()

    def _rewrite_column(self, table: str, place: Place, column: str, is_json: bool,
                        found: _Found, rewrite: Rewrite, where: str,
                        params: list[Any], done: Redaction) -> None:
        contains, needle_params = self._containing(column, found.needles, is_json,
                                                   found.beyond_ascii)
        has_session = table != "sessions" and self._db.has_column(table, "session_id")
        session = "session_id" if has_session else "NULL"
        key = _KEYS.get(table, ("id",))
        rows = self._db.execute(
            f"SELECT {session}, {column}, {', '.join(key)} FROM {table}"
            f" WHERE {where} AND {contains}", [*params, *needle_params]).fetchall()
        match = " AND ".join(f"{k} = ?" for k in key)
        updates: list[list[Any]] = []
        for session_id, value, *row_key in rows:
            new = _rewrite_json(value, rewrite) if is_json else rewrite(value)
            if new != value:
                updates.append([new, *row_key])
                done.add(place, (table, *row_key))
                if table == "sessions":
                    done.sessions.add(row_key[0])
                elif session_id is not None:
                    done.sessions.add(session_id)
        for start in range(0, len(updates), REWRITTEN_TOGETHER):
            self._db.executemany(f"UPDATE {table} SET {column} = ? WHERE {match}",
                                 updates[start:start + REWRITTEN_TOGETHER])

    def _containing(self, column: str, needles: Sequence[str], json_column: bool,
                    beyond_ascii: bool) -> tuple[str, list[str]]:
        """`_containing`, or with `beyond_ascii` true of a row holding any character beyond
        ASCII too (or, in JSON, one written as an escape)."""
        where, params = _containing(column, needles, json_column=json_column)
        if not beyond_ascii:
            return where, params
        beyond, pattern = (f"{column} ~ ?", _BEYOND_ASCII) if self._db.kind == "postgresql" \
            else (f"{column} GLOB ?", f"*{_BEYOND_ASCII}*")
        if not json_column:
            return f"({where} OR {beyond})", [*params, pattern]
        return (f"({where} OR {beyond} OR {column} LIKE ? ESCAPE '!')",
                [*params, pattern, "%\\u%"])

    def _table_exists(self, name: str) -> bool:
        # A table a later migration added exists when one of its columns does.
        return self._db.has_column(name, {"fact_history": "fact_id",
                                         "message_vectors": "message_id"}.get(name, "session_id"))


@dataclass(frozen=True)
class _Found:
    """What narrows the rows a rewrite reads (`RedactionTables.messages_containing`)."""

    needles: Sequence[str]
    beyond_ascii: bool


_BEYOND_ASCII = "[^\x01-\x7f]"
"""A character beyond ASCII (or a NUL, which neither syntax can name: a row holding one
is read, never missed), as a GLOB's and a PostgreSQL regular expression's class."""


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(str(int(i)) for i in ids)


def _containing(column: str, needles: Sequence[str], *, json_column: bool) -> tuple[str, list[str]]:
    """SQL true for a row whose `column` holds any needle in any ASCII case once the
    characters that draw nothing are taken out of it (A\u200bda holds `ada`), with its
    parameters; "" is held by every text (NULL holds nothing). Only ASCII is folded, as
    SQLite's lower() folds only ASCII (a purge reads every row beyond ASCII besides:
    `RedactionTables.messages_containing`)."""
    forms: list[str] = []
    for needle in needles:
        forms.append(needle.translate(_ASCII_LOWER))
        if json_column:
            forms.append(json_text(needle)[1:-1].translate(_ASCII_LOWER))
    patterns = ["%" + _escape_like(form) + "%" for form in dict.fromkeys(forms)]
    shown = column
    for _ in INVISIBLE:
        shown = f"replace({shown}, ?, '')"
    return ("(" + " OR ".join(f"lower({shown}) LIKE ? ESCAPE '!'" for _ in patterns) + ")",
            [param for pattern in patterns for param in (*INVISIBLE, pattern)])


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _escape_like(text: str) -> str:
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def _rewrite_json(value: str, rewrite: Rewrite) -> str:
    try:
        data = json.loads(value)
    except ValueError:
        return rewrite(value)
    new = _rewrite_in(data, rewrite)
    return value if new == data else json_text(new)


def _rewrite_in(data: Any, rewrite: Rewrite) -> Any:
    if isinstance(data, str):
        return rewrite(data)
    if isinstance(data, list):
        return [_rewrite_in(item, rewrite) for item in data]
    if isinstance(data, dict):
        # Keys too: a strategy may count by name ({"Zebulon": 2}). Two keys the rewrite makes
        # one keep the later's value.
        return {rewrite(key): _rewrite_in(item, rewrite) for key, item in data.items()}
    return data
