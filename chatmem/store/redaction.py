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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chatmem import fts
from chatmem.store import rewritten_keys, sharing, steps
from chatmem.store.connection import Connection
from chatmem.store.emptied_pins import drop_emptied_pins
from chatmem.store.fact_tables import profile_facts, profile_in
from chatmem.store.records import MESSAGE_COLUMNS, MessageRecord
from chatmem.store.redaction_plan import Place, Redaction, RewritePlan
from chatmem.store.rewritten_keys import Rewrite, distinct_fact_keys, rewrite_json
from chatmem.store.sent_counts import cached_counts, keep_sent_counts
from chatmem.store.stored_values import json_text
from chatmem.text import INVISIBLE

_KEYS = {"strategy_state": ("session_id", "strategy", "key"),
         "session_prompts": ("session_id", "from_turn")}
"""Primary keys of the rewritten tables that have no single `id` column."""

REWRITTEN_TOGETHER = 500
"""Rows one batch of a purge rewrites (and, for messages, indexes in one statement)."""


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
        # The text as stored, without a writer's label (MESSAGE_COLUMNS, no `writer`): the
        # spans found here are where the rewrite erases, in the stored text.
        return [MessageRecord(*row) for row in self._db.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id IN ({_ids(session_ids)})"
            f" AND {where} ORDER BY session_id, position", params)]

    def rewrite_stored_text(self, session_ids: Sequence[int], user: str | None,
                            needles: Sequence[str], rewrite: Rewrite, *,
                            beyond_ascii: bool = False) -> Redaction:
        """`plan_rewrite` then `apply_rewrite`, in one transaction."""
        with self._db.write():
            planned = self.plan_rewrite(session_ids, user, needles, rewrite,
                                        beyond_ascii=beyond_ascii)
            return self.apply_rewrite(planned)

    def plan_rewrite(self, session_ids: Sequence[int], user: str | None,
                     needles: Sequence[str], rewrite: Rewrite, *, beyond_ascii: bool = False,
                     without_fact: int | None = None,
                     emptied: Callable[[str], bool] | None = None) -> RewritePlan:
        """Each row `rewrite` would change, reading only: every stored text of the sessions,
        and of the facts (keys and values) of the sessions and of `user`'s profile but
        `without_fact` (the fact a purge erases itself), that contains one of `needles` (any
        case) or, with `beyond_ascii`, any character beyond ASCII (`messages_containing`).
        A fact whose rewritten value is `emptied` (nothing of its own left) is to be
        deleted, not kept as a marker every context would send. A dry run reports the plan;
        `apply_rewrite` carries it out, so both say the same."""
        planned = RewritePlan()
        if not needles or (not session_ids and user is None):
            return planned
        # No session (a profile's fact after every session of it was deleted): the profile's
        # other facts still hold the value. IN (NULL) matches no row.
        sessions = _ids(session_ids) or "NULL"
        found = _Found(needles, beyond_ascii)
        self._plan_messages(sessions, found, rewrite, planned)
        for table, place, texts, jsons in _SESSION_TABLES:
            if not self._table_exists(table):
                continue  # a table a later migration adds
            for column in (*texts, *jsons):
                self._plan_column(table, place, column, column in jsons, found, rewrite,
                                  f"session_id IN ({sessions})", [], planned)
        self._plan_state_keys(sessions, found, rewrite, planned)
        if emptied is not None:
            planned.redaction.dropped_pins += drop_emptied_pins(planned.updates, emptied)
        self._plan_column("sessions", Place.SYSTEM_PROMPTS, "system", False, found, rewrite,
                          f"id IN ({sessions})", [], planned)
        profile, forms = profile_in('"user"', user)
        owner = (f"(session_id IN ({sessions}) OR ({profile_facts(self._db.own_rows)}"
                 f" AND {profile}))")
        if without_fact is not None:
            owner = f"({owner} AND id <> {int(without_fact)})"
        for column in ("key", "value"):
            self._plan_column("facts", Place.FACTS, column, False, found, rewrite, owner,
                              forms, planned)
        self._plan_speakers(owner, forms, found, rewrite, planned)
        if emptied is not None:
            self._delete_emptied(planned, emptied)
        self._keep_keys_apart(planned, f"{profile_facts(self._db.own_rows)} AND {profile}",
                              forms, without_fact)
        if self._table_exists("fact_history"):
            gone = "".join(f" AND fact_id <> {int(i)}" for i in planned.redaction.deleted_facts)
            for column in ("key", "value"):
                self._plan_column("fact_history", Place.FACT_HISTORY, column, False, found,
                                  rewrite, f"fact_id IN (SELECT id FROM facts WHERE {owner})"
                                  f"{gone}", forms, planned)
        return planned

    def apply_rewrite(self, planned: RewritePlan) -> Redaction:
        """Write what `plan_rewrite` planned, in one transaction. Changed messages get a new
        index entry; their token counts and their sessions' vectors are dropped (both are
        recomputed on demand, vectors by `chatmem index`)."""
        with self._db.write():
            sent = cached_counts(self._db, [m for m, _, _ in planned.messages])
            self._write_messages(planned)
            updates: dict[tuple[str, str], list[list[Any]]] = {}
            for (table, column, *row_key), new in planned.updates.items():
                if table == "facts" and row_key[0] in planned.redaction.deleted_facts:
                    continue
                updates.setdefault((table, column), []).append([new, *row_key])
            # A row key last (a strategy state's `key`): its other columns are found by the
            # key they had.
            for (table, column), rows in sorted(
                    updates.items(), key=lambda item: item[0][1] in _KEYS.get(item[0][0], ())):
                match = " AND ".join(f"{k} = ?" for k in _KEYS.get(table, ("id",)))
                for start in range(0, len(rows), REWRITTEN_TOGETHER):
                    self._db.executemany(f"UPDATE {table} SET {column} = ? WHERE {match}",
                                         rows[start:start + REWRITTEN_TOGETHER])
            if planned.redaction.deleted_facts:
                self._db.execute(
                    f"DELETE FROM facts WHERE id IN ({_ids(planned.redaction.deleted_facts)})")
            keep_sent_counts(self._db, sent)
            # Text left each session whose rows changed, messages or not: a summary fold
            # begun before a purge of its summary alone would store the name again.
            steps.count_erasure(self._db, planned.redaction.sessions)
        return planned.redaction

    def _plan_messages(self, sessions: str, found: _Found, rewrite: Rewrite,
                       planned: RewritePlan) -> None:
        where, params = self._containing("content", found.needles, False, found.beyond_ascii)
        rows = self._db.execute(
            f"SELECT id, session_id, content, role FROM messages WHERE session_id IN ({sessions})"
            f" AND {where}", params).fetchall()
        done = planned.redaction
        changed_sessions: set[int] = set()
        for message_id, session_id, content, role in rows:
            new = rewrite(content)
            if new == content:
                continue
            planned.messages.append((message_id, new, role))
            done.add(Place.MESSAGES, message_id)
            changed_sessions.add(session_id)
        done.sessions |= changed_sessions
        planned.changed_sessions = sorted(changed_sessions)
        if changed_sessions and self._table_exists("message_vectors"):
            # A message's context vector encodes its neighbours: the sessions' vectors go.
            for (message_id,) in self._db.execute(
                    "SELECT message_id FROM message_vectors WHERE message_id IN"
                    f" (SELECT id FROM messages WHERE session_id IN"
                    f" ({_ids(planned.changed_sessions)}))").fetchall():
                done.add(Place.VECTORS, message_id)

    def _write_messages(self, planned: RewritePlan) -> None:
        rewritten = planned.messages
        # In batches, each one statement of a kind: on a server each is a round trip, and
        # each index statement updates the sessions' word statistics rows once.
        for start in range(0, len(rewritten), REWRITTEN_TOGETHER):
            batch = rewritten[start:start + REWRITTEN_TOGETHER]
            self._db.executemany("UPDATE messages SET content = ? WHERE id = ?",
                                 [(new, message_id) for message_id, new, _ in batch])
            self._db.index_words([(message_id, fts.message_index_text(role, new))
                                  for message_id, new, role in batch])
            self._db.execute("DELETE FROM token_counts WHERE message_id IN"
                             f" ({_ids(message_id for message_id, _, _ in batch)})")
        if not planned.changed_sessions:
            return
        if self._table_exists("message_vectors"):
            changed = _ids(planned.changed_sessions)
            if self._db.has_column("vector_cache", "digest"):
                # Nor may the erased texts be found by their digests.
                self._db.execute("DELETE FROM vector_cache WHERE message_id IN"
                                f" (SELECT id FROM messages WHERE session_id IN ({changed}))")
            self._db.execute("DELETE FROM message_vectors WHERE message_id IN"
                             f" (SELECT id FROM messages WHERE session_id IN ({changed}))")
        # The index may keep a replaced text's terms until told to forget them.
        self._db.forget_erased_words()

    def _plan_column(self, table: str, place: Place, column: str, is_json: bool,
                     found: _Found, rewrite: Rewrite, where: str,
                     params: list[Any], planned: RewritePlan) -> None:
        contains, needle_params = self._containing(column, found.needles, is_json,
                                                   found.beyond_ascii)
        has_session = table != "sessions" and self._db.has_column(table, "session_id")
        session = "session_id" if has_session else "NULL"
        key = _KEYS.get(table, ("id",))
        rows = self._db.execute(
            f"SELECT {session}, {column}, {', '.join(key)} FROM {table}"
            f" WHERE {where} AND {contains}", [*params, *needle_params]).fetchall()
        done = planned.redaction
        for session_id, value, *row_key in rows:
            new = (rewrite_json(value, rewrite, keys=table == "strategy_state") if is_json
                   else rewrite(value))
            if new == value:
                continue
            planned.updates[(table, column, *row_key)] = new
            done.add(place, (table, *row_key))
            if table == "sessions":
                done.sessions.add(row_key[0])
            elif session_id is not None:
                done.sessions.add(session_id)

    def _plan_state_keys(self, sessions: str, found: _Found, rewrite: Rewrite,
                         planned: RewritePlan) -> None:
        """The keys strategy-state rows are stored under (a plugin's `env.state.set(name,
        **values)` names them), but chatmem's own (rewritten_keys.state_keys)."""
        contains, params = self._containing("key", found.needles, False, found.beyond_ascii)
        rows = self._db.execute("SELECT session_id, strategy, key FROM strategy_state"
                                f" WHERE session_id IN ({sessions}) AND {contains}", params)
        for row, new in rewritten_keys.state_keys(self._db, rows.fetchall(), rewrite).items():
            planned.updates[("strategy_state", "key", *row)] = new
            planned.redaction.add(Place.STRATEGY_STATE, ("strategy_state", *row))
            planned.redaction.sessions.add(row[0])

    def _plan_speakers(self, owner: str, params: list[Any], found: _Found, rewrite: Rewrite,
                       planned: RewritePlan) -> None:
        """Who stated the facts (a group chat member's name, `carol (via bob)` relayed by a
        grantee): her name is what she is, and a purge of it left every fact she stated
        saying so. Rewritten as stored text is, each speaker kept one and apart from the
        others (rewritten_keys.fact_speakers)."""
        contains, needle_params = self._containing("speaker", found.needles, False,
                                                   found.beyond_ascii)
        rows = self._db.execute(
            f"SELECT id, session_id, speaker FROM facts WHERE {owner} AND speaker IS NOT NULL"
            f" AND {contains} ORDER BY id", [*params, *needle_params]).fetchall()
        for (fact_id, session_id), new in rewritten_keys.fact_speakers(
                self._db, rows, rewrite).items():
            planned.updates[("facts", "speaker", fact_id)] = new
            planned.redaction.add(Place.FACTS, ("facts", fact_id))
            planned.redaction.sessions.add(session_id)

    def _delete_emptied(self, planned: RewritePlan, emptied: Callable[[str], bool]) -> None:
        """Mark the facts whose rewritten value is `emptied` to be deleted, counted apart."""
        ids = [row[2] for row, new in planned.updates.items()
               if row[:2] == ("facts", "value") and emptied(new)]
        if not ids:
            return
        done = planned.redaction
        for fact_id, key in self._db.execute(
                f"SELECT id, key FROM facts WHERE id IN ({_ids(ids)}) ORDER BY id").fetchall():
            done.deleted_facts[fact_id] = planned.updates.get(("facts", "key", fact_id), key)
            done.rows.get(Place.FACTS, set()).discard(("facts", fact_id))
            done.add(Place.FACTS_DELETED, ("facts", fact_id))

    def _keep_keys_apart(self, planned: RewritePlan, profile: str, params: list[Any],
                         without_fact: int | None) -> None:
        rewritten = {row[2]: new for row, new in planned.updates.items()
                     if row[:2] == ("facts", "key")}
        gone = {*planned.redaction.deleted_facts, *([] if without_fact is None else [without_fact])}
        for fact_id, key in distinct_fact_keys(self._db, rewritten, gone, profile,
                                               params).items():
            planned.updates[("facts", "key", fact_id)] = key
            planned.redaction.distinct_keys[fact_id] = key

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
