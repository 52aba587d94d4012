"""Facts the strategies derive from the history, and the profile they belong to (the
FactRepository of store.protocols): one live fact per key and owner, its history kept."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from chatmem.errors import NotFound, StoreError
from chatmem.store import rendered, sharing, steps
from chatmem.store.connection import Connection, fetch_rows, fetch_value
from chatmem.store.fact_keys import (
    FOLDING_APART,
    plain_forms,
    same_key,
    stored_forms,
    variant_letters,
)
from chatmem.store.records import (
    MOST_INTEGER,
    AccessLevel,
    FactHistoryRecord,
    FactRecord,
    FactScope,
)
from chatmem.store.restored_facts import KeptFact, restore_facts
from chatmem.store.stored_values import json_text, known_columns, stored_json
from chatmem.text import profile_forms, profile_name


def profile_facts(own_rows: str) -> str:
    """SQL true for a fact of the connecting role's own user profile: scope 'user', no
    session, and (on PostgreSQL) its own row. A row of scope 'user' in a session (which
    chatmem never writes; p013 forbids it) is not a profile fact: on PostgreSQL it is its
    session's owner's, readable through a share, and would put that owner's words into
    the reader's profile."""
    return f"scope = 'user' AND session_id IS NULL AND {own_rows}"


def profile_in(column: str, user: str | None) -> tuple[str, list[Any]]:
    """SQL true where `column` names the profile `user` (None: no profile), with its
    parameters: either Unicode form, as a history written before profile names were
    normalized may hold an NFD one, and its rows are still this profile's."""
    if user is None:
        return f"{column} IS NULL", []
    forms = profile_forms(user)
    return f"{column} IN ({', '.join('?' for _ in forms)})", list(forms)


class FactTables:
    """Facts, their earlier values, and the turns that sent them (`store.facts`)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._db = connection.db

    def _as_stamped(self, session_id: int, value: str,
                    source_message_id: int | None) -> str | None:
        """Who the server says states a fact with no speaker this role writes into the
        session (postgres_writers, p024): in a session another owns, this role, unless it
        cites a message of hers (not a reply) holding its value. The fact is then found
        again under that speaker, not written twice."""
        if self._db.kind != "postgresql":
            return None
        access = self._db.session_access(session_id)
        if access is None or access.level is not AccessLevel.WRITE:
            return None
        hers = source_message_id is not None and fetch_value(
            self._db, "SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE m.id = ? AND m.session_id = ? AND m.role <> 'assistant'"
            " AND (m.writer IS NULL OR m.writer = s.owner)"
            " AND strpos(lower(m.content), lower(?)) > 0",
            [source_message_id, session_id, value])
        return None if hers else access.role

    def upsert_fact(
        self,
        key: str,
        value: str,
        *,
        scope: FactScope,
        user: str | None = None,
        session_id: int | None = None,
        source_message_id: int | None = None,
        source_turn: int | None = None,
        source_session_id: int | None = None,
        speaker: str | None = None,
    ) -> FactRecord:
        """Add a fact, or update the live fact with the same key in the same scope (and, in a
        session, stated by the same `speaker`: a group chat's member; None: the user).

        A new value keeps the old one in the fact's history. `source_session_id`
        is where it was stated (default: the owning session).
        """
        stamp = self._connection.now()
        speaker = speaker if scope == "session" else None  # a profile is its user's own
        if scope == "session" and speaker is None and session_id is not None:
            speaker = self._as_stamped(session_id, value, source_message_id)
        owner_sql, owner = self._fact_owner(scope, user, session_id)
        if scope == "session":
            owner_sql, owner = (f"{owner_sql} AND speaker IS NULL", owner) if speaker is None \
                else (f"{owner_sql} AND speaker = ?", [*owner, speaker])
        stated_in = source_session_id if source_session_id is not None else session_id
        with self._db.write():
            if stated_in is not None:
                steps.check_session_kept(self._db, stated_in)
            if scope == "session" and session_id is not None:
                steps.check_session_kept(self._db, session_id)
                sharing.check_writable_session(self._connection, session_id)
            same = [f for f in self._stored_alike(key, owner_sql, owner, stamp)
                    if same_key(f.key, key)]
            if same:
                old = same[0]
                self._merge_forms(old, same[1:], stamp)
                if old.value != value:
                    self._db.execute(
                        "INSERT INTO fact_history (fact_id, key, value, source_session_id,"
                        " source_turn, stated_at, replaced_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [old.id, old.key, old.value, old.source_session_id, old.source_turn,
                         old.updated_at, stamp],
                    )
                self._db.execute(
                    "UPDATE facts SET key = ?, value = ?, source_message_id = ?,"
                    " source_turn = ?, source_session_id = ?, updated_at = ? WHERE id = ?",
                    [key, value, source_message_id, source_turn, stated_in, stamp, old.id],
                )
                fact_id = old.id
            else:
                fact_id = steps.insert_id(
                    self._db,
                    "INSERT INTO facts (scope, \"user\", session_id, key, value, source_message_id,"
                    " source_turn, source_session_id, created_at, updated_at, speaker)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [scope, profile_name(user) if scope == "user" and user is not None else None,
                     session_id if scope == "session" else None, key, value,
                     source_message_id, source_turn, stated_in, stamp, stamp, speaker],
                )
        return self.fact(int(fact_id))

    def keep_speaker(self, fact_id: int, speaker: str) -> None:
        """Write who stated a session fact stored before facts kept it (its row reads NULL,
        the user's, though a member's turn stated it; memory.state.keep_speakers): his next
        value of its key then replaces it, its history kept, and the user's lives beside it."""
        fact = self.fact(fact_id)
        if fact.session_id is not None:
            sharing.check_writable_session(self._connection, fact.session_id)
        with self._db.write():
            self._db.execute("UPDATE facts SET speaker = ? WHERE id = ? AND speaker IS NULL"
                             " AND scope = 'session'", [speaker, fact_id])

    def _stored_alike(
        self, key: str, owner_sql: str, owner: list[Any], stamp: str
    ) -> list[FactRecord]:
        """The owner's live facts that may be `key` in another form, looked up by the forms
        it may be stored in (straße for STRASSE too) and the keys holding a full-width or
        traditional character of one of its own (fact_keys.variant_letters), so a write
        reads a handful of rows however many facts the owner holds."""
        forms = stored_forms(key)
        letters = variant_letters(key)
        if forms is None:  # too many spellings: read the keys with a letter folding apart
            forms = plain_forms(key)
            letters += FOLDING_APART
        holding, pattern = ("1 = 0", list[str]()) if not letters else (
            ("key ~ ?", [f"[{letters}]"]) if self._db.kind == "postgresql"
            else ("key GLOB ?", [f"*[{letters}]*"]))
        marks = ", ".join("?" for _ in forms)
        rows = fetch_rows(self._db,
            f"SELECT * FROM facts WHERE deleted_at IS NULL AND {owner_sql}"
            f" AND (expires_at IS NULL OR expires_at > ?) AND (key IN ({marks}) OR {holding})"
            " ORDER BY id",
            [*owner, stamp, *forms, *pattern],
        )
        return [FactRecord.from_row(row) for row in rows]

    def _merge_forms(self, kept: FactRecord, others: list[FactRecord], stamp: str) -> None:
        """Fold the live facts of one key stored in other forms (café composed and not,
        written before keys were normalized) into `kept`: their values become its earlier
        ones, oldest first, and they are forgotten, so one key has one live fact again."""
        for other in sorted(others, key=lambda f: (f.updated_at, f.id)):
            self._db.execute(
                "INSERT INTO fact_history (fact_id, key, value, source_session_id,"
                " source_turn, stated_at, replaced_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [kept.id, other.key, other.value, other.source_session_id, other.source_turn,
                 other.updated_at, stamp],
            )
            self._db.execute("UPDATE facts SET deleted_at = ? WHERE id = ?", [stamp, other.id])

    def restore(self, facts: Sequence[KeptFact]) -> int:
        """Facts an export archive kept, as they were (restored_facts.restore_facts)."""
        return restore_facts(self._connection, facts, self.facts())

    def fact_history(self, fact_ids: list[int]) -> dict[int, list[FactHistoryRecord]]:
        """Fact id → the values it had before, oldest first."""
        if not fact_ids:
            return {}
        marks = ", ".join("?" for _ in fact_ids)
        history: dict[int, list[FactHistoryRecord]] = {}
        for row in fetch_rows(self._db, f"SELECT * FROM fact_history WHERE fact_id IN ({marks})"
                              " ORDER BY id", fact_ids):
            history.setdefault(row["fact_id"], []).append(
                FactHistoryRecord(**known_columns(FactHistoryRecord, row)))
        return history

    def _fact_owner(self, scope: str, user: str | None,
                    session_id: int | None) -> tuple[str, list[Any]]:
        if scope == "user":
            where, params = profile_in('"user"', user)
            return f"{profile_facts(self._db.own_rows)} AND {where}", params
        if scope == "session":
            return "scope = 'session' AND session_id = ?", [session_id]
        raise StoreError(f"fact scope must be 'session' or 'user', got {scope!r}")

    def fact(self, fact_id: int) -> FactRecord:
        rows = (fetch_rows(self._db, "SELECT * FROM facts WHERE id = ?", [fact_id])
                if 0 < fact_id <= MOST_INTEGER else [])
        if not rows:
            raise NotFound(f"no fact with id {fact_id}")
        return FactRecord.from_row(rows[0])

    def facts(
        self,
        *,
        user: str | None = None,
        session_id: int | None = None,
        include_deleted: bool = False,
    ) -> list[FactRecord]:
        """Live facts of a user profile and/or a session, oldest first."""
        owners = [self._fact_owner(scope, user, session_id)
                  for scope, owner in (("user", user), ("session", session_id))
                  if owner is not None]
        params = [p for _, ps in owners for p in ps]
        sql = "SELECT * FROM facts WHERE (" + (
            " OR ".join(f"({where})" for where, _ in owners) if owners else "1 = 1") + ")"
        if not include_deleted:
            # A fact past its own end (/remember --for) is gone at once, pruned or not.
            sql += " AND deleted_at IS NULL AND (expires_at IS NULL OR expires_at > ?)"
            params.append(self._connection.now())
        return [FactRecord.from_row(r) for r in fetch_rows(self._db, sql + " ORDER BY id", params)]

    def check_forgettable(self, fact: FactRecord) -> None:
        """Raise unless this role may forget `fact`: in a session shared with it for
        writing, only a value it stated (sharing.check_stated_by_writer; p033 on the
        server)."""
        sharing.check_stated_by_writer(self._connection, fact)

    def forget_fact(self, fact_id: int, *, purge: bool = False) -> None:
        """Soft-delete a fact (it never reaches a context again), or erase it physically."""
        fact = self.fact(fact_id)
        if fact.session_id is not None:
            sharing.check_writable_session(self._connection, fact.session_id)
            self.check_forgettable(fact)
        with self._db.write():
            if purge:
                self._db.execute("DELETE FROM facts WHERE id = ?", [fact_id])
            else:
                self._db.execute("UPDATE facts SET deleted_at = ? WHERE id = ?",
                                [self._connection.now(), fact_id])

    def turn_contexts_with(self, kind: str) -> list[tuple[int, dict[str, Any], str | None]]:
        """(turn id, context as stored, rendered prompt) of every turn whose context has a
        `kind` part."""
        rows = fetch_rows(self._db,
            "SELECT id, session_id, context, rendered_prompt, rendered FROM turns"
            " WHERE context LIKE ? ESCAPE '!'",
            ["%" + json.dumps({"kind": kind})[1:-1].replace("!", "!!").replace("%", "!%")
             .replace("_", "!_") + "%"],
        )
        return [(r["id"], stored_json(r["context"], f"turn row {r['id']}: context"),
                 rendered.from_columns(self._db, r["session_id"], r["rendered_prompt"],
                                       r["rendered"], f"turn row {r['id']}"))
                for r in rows]

    def rewrite_turn_context(
        self, turn_id: int, context: Mapping[str, Any], rendered_prompt: str | None
    ) -> None:
        """Replace a stored context (as stored) and its rendered prompt (stored by reference
        again); used only to redact a purged fact from past turns."""
        with self._db.write():
            session_id = fetch_value(self._db, "SELECT session_id FROM turns WHERE id = ?",
                                     [turn_id])
            self._db.execute(
                "UPDATE turns SET context = ?, rendered_prompt = ?, rendered = ? WHERE id = ?",
                [json_text(context),
                 *rendered.to_columns(self._db, session_id, context, rendered_prompt),
                 turn_id],
            )

