"""Sessions: their settings, system prompts over time, probes, renaming and erasing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import count
from typing import Any

from chatmem.errors import Listed, NotFound, StoreConflict, StoreError, UsageError
from chatmem.names import did_you_mean
from chatmem.store import sharing, steps
from chatmem.store.connection import Connection, fetch_rows, fetch_value
from chatmem.store.messages import MessageTables
from chatmem.store.records import (
    AccessLevel,
    SessionAccess,
    SessionRecord,
    SessionSummary,
    session_address,
)
from chatmem.store.session_names import check_session_name, normal_name
from chatmem.store.stored_values import json_text, stored_json
from chatmem.text import is_valid, profile_name

HOLDING = (
    ("messages", "session_id = ?"), ("turns", "session_id = ?"),
    ("summaries", "session_id = ?"), ("strategy_state", "session_id = ?"),
    ("probes", "session_id = ?"), ("images", "session_id = ?"),
    ("facts", "session_id = ? OR source_session_id = ?"),
    ("fact_history", "source_session_id = ?"),
    # A session is created with its first prompt: a prompt for a later turn is its own.
    ("session_prompts", "session_id = ? AND from_turn > 1"),
)
"""What a session holds that `discard_empty_session` must not delete with it (table,
condition on the session's id): every table that names a session but index_leases (who
embeds its backlog; an empty session has none to lose) and PostgreSQL's word index, which
only its messages fill."""
NUMBERED = 64
"""How many of a stem's numbered names `numbered` looks up in one statement."""
POSTGRESQL_HOLDING = (("session_shares", "session_id = ?"),)
"""PostgreSQL's table of that kind too: whom it is shared with."""


SETTINGS = ("name", "strategy", "params", "system", "provider", "model", "user",
            "retention_days")
"""What a user sets on a session (by a command, or another process): one set since it was
opened is kept, held or not. Compared read back, not by updated_at: two changes within a
millisecond stamp it alike, and retention leaves it as it was (idle time is what it measures)."""


def _set_up_since(now: SessionRecord, seen: SessionRecord) -> bool:
    return any(getattr(now, field) != getattr(seen, field) for field in SETTINGS)


class SessionTables:
    """Sessions by name, their settings and prompts over time, probes (`store.sessions`)."""

    def __init__(self, connection: Connection, history: MessageTables) -> None:
        self._connection = connection
        self._db = connection.db
        self._history = history

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
        unfinished: bool = False,
    ) -> SessionRecord:
        """A new session; `unfinished`: under an unfinished name (store/unfinished.py),
        which no other session may take."""
        steps.check_new_name(self._db, name, unfinished=unfinished)
        with self._db.write():
            session_id = steps.insert_session(
                self._db, name, strategy, params or {}, stamp=self._connection.now(),
                provider=provider, model=model, system=system, user=user, tokenizer=tokenizer)
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
        instead of one failing because the other created it first. Patient, as the rest of
        a turn's writes: a new session's first turn waits for another process's long write
        (an import) as a later turn's does, not failing after the busy timeout.
        """
        with self._db.write(patient=True, replied=False):
            found = self.find_session(name)
            if found is None:
                check_session_name(name)  # the one rule, for a new name only
                session_id = steps.insert_session(self._db, name, strategy, params or {},
                                                  stamp=self._connection.now(), **fields)
        if found is not None:
            return found, False
        return self.session_by_id(session_id), True

    def session_names(self, session_ids: Iterable[int]) -> dict[int, str]:
        """Session id → name, for the ids that still exist."""
        ids = list(session_ids)
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        return {r["id"]: r["name"] for r in fetch_rows(self._db,
            f"SELECT id, name FROM sessions WHERE id IN ({marks})", ids)}

    def session_addresses(self, session_ids: Iterable[int]) -> dict[int, str]:
        """Session id → what names it to the user (`address`: `OWNER/NAME` when shared with
        them, as their own may have its name), for the ids that still exist."""
        ids = list(session_ids)
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        return {r["id"]: session_address(r["name"], r["shared_by"]) for r in fetch_rows(
            self._db, f"SELECT id, name, {self._db.shared_by} AS shared_by FROM sessions"
            f" WHERE id IN ({marks})", ids)}

    def find_session(self, name: str) -> SessionRecord | None:
        """The user's own session `name`, or `OWNER/NAME`: the one OWNER shares with them, on
        PostgreSQL. A plain name never reaches a share: else a name the user has not used yet
        would put their conversation into another's session, or (a read-only share) refuse
        it. A session name has no `/` and a role's name none either (sharing.ROLE_NAME),
        so the two forms never name the same thing."""
        if not is_valid(name):
            raise UsageError(f"session name {name!r} is not valid UTF-8")
        owner, slash, own_name = name.partition("/")
        if slash:
            if self._db.kind != "postgresql":
                return None  # a file has one user, and no name holds a `/`
            rows = fetch_rows(self._db, "SELECT * FROM sessions WHERE name = ? AND owner = ?",
                              [normal_name(own_name), owner])
        else:
            rows = fetch_rows(self._db, "SELECT * FROM sessions WHERE name = ?"
                              f" AND {self._db.own_rows}", [normal_name(name)])
        return SessionRecord.from_row(rows[0]) if rows else None

    def numbered(self, stem: str, *, at_most: int) -> dict[str, tuple[int, int]]:
        """The user's own sessions named `stem` or `stem-N` (N from 2, as `serve` names chats
        that began alike): name → its id and how many messages its history holds, counted
        no further than `at_most` (`message_count`). One statement, where a look at each
        name was two, for every request of a chat edited N times: names are looked up by
        the index NUMBERED at a time, the next NUMBERED only when the last few of these
        are there (a longer gap ends them)."""
        stem = normal_name(stem)
        found: dict[str, tuple[int, int]] = {}
        for first in count(1, NUMBERED):
            names = [stem if n == 1 else f"{stem}-{n}" for n in range(first, first + NUMBERED)]
            rows = fetch_rows(
                self._db, "SELECT id, name, (SELECT count(*) FROM (SELECT 1 FROM messages"
                " WHERE messages.session_id = sessions.id AND messages.superseded = 0"
                f" LIMIT ?) AS held) AS held_count FROM sessions WHERE name IN"
                f" ({', '.join('?' * len(names))}) AND {self._db.own_rows}",
                [max(at_most, 0), *names])
            found.update((row["name"], (int(row["id"]), int(row["held_count"])))
                         for row in rows)
            if not set(names[-NUMBERED // 4:]) & found.keys():
                return found
        raise AssertionError("unreachable")

    def last_used_session(self) -> SessionRecord | None:
        """The connecting user's own session written to last (a turn, or a change to its
        settings); None: none yet. Never one shared with them: its owner sets when it was
        last written, and so would choose where their next `-c` message goes."""
        rows = fetch_rows(self._db, f"SELECT * FROM sessions WHERE {self._db.own_rows}"
                          " ORDER BY updated_at DESC, id DESC LIMIT 1")
        return SessionRecord.from_row(rows[0]) if rows else None

    def session(self, name: str) -> SessionRecord:
        found = self.find_session(name)
        if found is None:
            # Addresses: a share of that very name is suggested as OWNER/NAME, what reaches it.
            names = [session_address(row["name"], row["shared_by"]) for row in fetch_rows(
                self._db, f"SELECT name, {self._db.shared_by} AS shared_by FROM sessions")]
            shared = [n for n in names if n.partition("/")[2] == normal_name(name)]
            hint = (f"; did you mean {shared[0]!r}?" if len(shared) == 1 and "/" not in name
                    else did_you_mean(name, names))
            raise NotFound(f"no session named {name!r} in {self._connection.location}"
                           f"{hint}", listed=Listed.SESSIONS)
        return found

    def session_by_id(self, session_id: int) -> SessionRecord:
        rows = fetch_rows(self._db, "SELECT * FROM sessions WHERE id = ?", [session_id])
        if not rows:
            raise NotFound(f"no session with id {session_id}")
        return SessionRecord.from_row(rows[0])

    def address(self, session_id: int) -> str:
        """What names the session in a command or a client's next call: `OWNER/NAME` when it
        is shared with the user (their own may have its name), else its name."""
        rows = fetch_rows(self._db, f"SELECT name, {self._db.shared_by} AS shared_by"
                          " FROM sessions WHERE id = ?", [session_id])
        if not rows:
            raise NotFound(f"no session with id {session_id}")
        return session_address(rows[0]["name"], rows[0]["shared_by"])

    def erasures(self, session_id: int) -> int | None:
        """How many times text left the session's memory (`count_erasure`); None when the
        session is gone (deleted, erased by retention, or no longer readable)."""
        value = fetch_value(self._db, "SELECT erasures FROM sessions WHERE id = ?", [session_id])
        return None if value is None else int(value)

    def check_kept(self, session_id: int, consequence: str = steps.MEMORY_NOT_UPDATED) -> None:
        """Under the write lock: SessionGone saying `consequence` when the session is gone."""
        steps.check_session_kept(self._db, session_id, consequence)

    def erased_since(self, session_id: int, seen: int | None) -> bool:
        """Under the write lock, before what was made of the session's text read when its
        `erasures` were `seen` is stored: whether text left its memory since (a purge, a
        replaced turn, here or in another process); SessionGone (its memory not updated)
        when the session is gone, not a purge."""
        return steps.check_session_kept(self._db, session_id) != seen

    def session_access(self, session_id: int) -> SessionAccess:
        """Whether the connecting role owns the session, may write it, or only read it."""
        return sharing.session_access(self._connection, session_id)

    def shares(self, session_id: int) -> list[sharing.Share] | None:
        """Whom the user's own session is shared with ([] in a file); None for one another
        role shared with them (sharing.shares)."""
        return sharing.shares(self._connection, session_id)

    def copy_shares(self, from_id: int, to_id: int) -> int:
        """Share `to_id` with whom the user's own `from_id` is shared (sharing.copy_shares)."""
        return sharing.copy_shares(self._connection, from_id, to_id)

    def may_write(self, session_id: int) -> bool:
        """Whether this role may add to the session (its own, or shared for writing)."""
        return self.session_access(session_id).level is not AccessLevel.READ

    def check_session_writable(self, session_id: int, *, owners_only: str | None = None
                               ) -> None:
        """Raise, before anything is sent or changed, unless this role may write the session
        (sharing.check_writable_session)."""
        sharing.check_writable_session(self._connection, session_id, owners_only=owners_only)

    def check_session_owned(self, session_id: int, what: str) -> None:
        """Raise unless this role owns the session (sharing.check_own_session)."""
        sharing.check_own_session(self._connection, session_id, what)

    def update_session(self, session_id: int, **fields: Any) -> SessionRecord:
        """Change a session's settings; returns it as now stored."""
        allowed = {"strategy", "params", "provider", "model", "system", "user", "name",
                   "tokenizer"}
        if not fields.keys() <= allowed:
            raise StoreError(f"cannot update session fields {sorted(fields.keys() - allowed)}")
        # A write share adds turns; the session's settings stay its owner's.
        self.check_session_writable(session_id, owners_only="rename" if "name" in fields
                                    else "change the user profile of" if "user" in fields
                                    else "change the settings of")
        if "name" in fields:
            # Every new name by the one rule: an unfinished import's publish too, whose names
            # an archive chose (a reserved one would hide the session, then lose it).
            check_session_name(fields["name"])
            fields["name"] = normal_name(fields["name"])
        if "params" in fields:
            fields["params"] = json_text(fields["params"])
        if fields.get("user") is not None:
            fields["user"] = profile_name(fields["user"])
        fields["updated_at"] = self._connection.now()
        assignments = ", ".join(f'"{k}" = ?' for k in fields)
        with self._db.write():
            if "system" in fields and fields["system"] != self.session_by_id(session_id).system:
                # The new prompt holds from the next turn on; earlier turns keep theirs.
                steps.set_prompt(self._db, session_id, self._history.turn_count(session_id) + 1,
                                 fields["system"])
            try:
                self._db.execute(
                    f"UPDATE sessions SET {assignments} WHERE id = ?",
                    [*fields.values(), session_id],
                )
            except StoreConflict:
                raise StoreError(f"a session named {fields.get('name')!r} already exists") from None
        return self.session_by_id(session_id)

    def set_times(self, session_id: int, created_at: str, updated_at: str) -> None:
        """Date the user's own session as another history had it (an archive's restore):
        `updated_at` is what retention and "the most recent session" go by, so a restored
        session stamped with the import's moment would outlive its retention and come first."""
        self.check_session_owned(session_id, "date")
        with self._db.write():
            self._db.execute("UPDATE sessions SET created_at = ?, updated_at = ? WHERE id = ?",
                             [created_at, updated_at, session_id])

    def system_prompts(self, session_id: int) -> list[tuple[int, str | None]]:
        """(first turn, system prompt) of every prompt the session used, oldest first."""
        rows = fetch_rows(self._db, "SELECT from_turn, system FROM session_prompts"
                          " WHERE session_id = ? ORDER BY from_turn", [session_id])
        return [(r["from_turn"], r["system"]) for r in rows]

    def set_system_prompts(self, session_id: int,
                           prompts: Iterable[tuple[int, str | None]]) -> None:
        """Replace the session's prompt history (an import brings its own)."""
        self.check_session_writable(session_id)
        with self._db.write():
            self._db.execute("DELETE FROM session_prompts WHERE session_id = ?", [session_id])
            for from_turn, system in prompts:
                steps.set_prompt(self._db, session_id, from_turn, system)

    def system_for_turn(self, session_id: int, turn: int) -> str | None:
        """The system prompt turn `turn` was (or will be) sent with."""
        prompts = [s for first, s in self.system_prompts(session_id) if first <= turn]
        if prompts:
            return prompts[-1]
        return self.session_by_id(session_id).system

    def rename_session(self, name: str, new_name: str) -> SessionRecord:
        """Give a session a new name; everything it owns follows (rows point at its id)."""
        record = self.session(name)
        self.check_session_writable(record.id, owners_only="rename")
        steps.check_new_name(self._db, new_name)
        return self.update_session(record.id, name=normal_name(new_name))

    def list_sessions(self) -> list[SessionSummary]:
        """Every session with its counts, most recently used first."""
        rows = fetch_rows(self._db,
            f"""
            SELECT s.name, s.strategy, s.params, s.provider, s.model, s.tokenizer, s.created_at,
                   s.updated_at,
                   (SELECT count(*) FROM messages m WHERE m.session_id = s.id
                    AND m.superseded = 0) AS messages,
                   (SELECT coalesce(max(m.turn), 0) FROM messages m
                    WHERE m.session_id = s.id AND m.superseded = 0) AS turns,
                   (SELECT count(*) FROM turns t WHERE t.session_id = s.id) AS requests,
                   (SELECT count(*) FROM turns t WHERE t.session_id = s.id
                    AND t.status = 'failed') AS failed,
                   (SELECT count(*) FROM turns t WHERE t.session_id = s.id
                    AND t.status = 'cancelled') AS cancelled,
                   s.id, {self._db.shared_by} AS shared_by,
                   {sharing.listed_access(self._db.kind)}
            FROM sessions s ORDER BY s.updated_at DESC, s.id DESC
            """
        )
        return [SessionSummary.from_row(row) for row in rows]

    def delete_session(self, name: str) -> None:
        """Erase a session physically: messages, turns, summaries, facts, index rows."""
        record = self.session(name)
        self.check_session_writable(record.id, owners_only="delete")
        with self._db.write():
            steps.erase_session_rows(self._db, record.id)
            self._db.forget_erased_words()

    def discard_empty_session(self, session_id: int, *,
                              as_seen: SessionRecord | None = None) -> bool:
        """Remove a session that holds nothing (one that was only opened): no row of any
        table keyed by it (`HOLDING`), its first prompt aside, and no retention of its own.
        Whether it was removed: one that holds anything (a fact /remember'd in it, a
        strategy's state, a pin, a probe, an image, a prompt for a later turn, a share, a
        `sessions retention NAME forever`) stays, as it was. `as_seen`: the session as the
        caller opened it; renamed or set up since (by another process), it stays too."""
        tables = [*HOLDING, *(POSTGRESQL_HOLDING if self._db.kind == "postgresql" else ())]
        held = " AND ".join(f"NOT EXISTS (SELECT 1 FROM {table} WHERE {where})"
                            for table, where in tables)
        ids = [session_id] * sum(where.count("?") for _, where in tables)
        with self._db.write():
            if as_seen is not None and _set_up_since(self.session_by_id(session_id), as_seen):
                return False
            self._db.execute(f"DELETE FROM sessions WHERE id = ? AND retention_days IS NULL"
                             f" AND {held}", [session_id, *ids])
            return fetch_value(self._db, "SELECT 1 FROM sessions WHERE id = ?",
                               [session_id]) is None

    # -- probes -------------------------------------------------------------

    def add_probes(self, session_id: int, probes: Iterable[Mapping[str, Any]]) -> int:
        """Store probe lines, each with the message position it was asked after (and
        `before_prompt`: before the system prompt change that follows that message)."""
        rows = [[session_id, p["after_position"], p["question"], json_text(list(p["expect_ids"])),
                 json_text(list(p["expect_text"])), int(bool(p.get("before_prompt")))]
                for p in probes]
        self.check_session_writable(session_id)
        with self._db.write():
            self._db.executemany(
                "INSERT INTO probes (session_id, after_position, question, expect_ids,"
                " expect_text, before_prompt) VALUES (?, ?, ?, ?, ?, ?)", rows)
        return len(rows)

    def probes(self, session_id: int) -> list[dict[str, Any]]:
        rows = fetch_rows(self._db, "SELECT after_position, question, expect_ids, expect_text,"
                          " before_prompt FROM probes WHERE session_id = ?"
                          " ORDER BY after_position, id", [session_id])
        return [{**r, "before_prompt": bool(r["before_prompt"]),
                 "expect_ids": stored_json(r["expect_ids"], "a probe's expect_ids", "[]"),
                 "expect_text": stored_json(r["expect_text"], "a probe's expect_text", "[]")}
                for r in rows]
