"""Copying sessions between histories (a file and a PostgreSQL database, either way).

Every table of the chosen sessions comes along: settings and prompts, messages with
their token counts, vectors and full-text entries, turns with their contexts,
summaries, facts and their history, strategy state, probes and images. Ids are the target's
own: each id column is remapped through the rows copied before it, and an id that
points outside the copy (a fact's source session that was not chosen) becomes NULL.
Contexts name messages by position in their session, so they copy as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from json import loads
from typing import TYPE_CHECKING, Any

from chatmem import fts
from chatmem.errors import NotFound, StoreError, UsageError
from chatmem.store import steps
from chatmem.store.connection import fetch_rows, fetch_value
from chatmem.store.postgres_writers import (
    DERIVED,
    trusted_by_reader,
    trusted_count,
    trusted_index,
    trusted_memory,
)
from chatmem.store.records import FactRecord, as_read
from chatmem.store.restored_facts import ProfileValue, is_live, repeated_profile_facts
from chatmem.store.session_names import is_reserved, is_session_name, normal_name
from chatmem.store.sharing import Exemption, row_security_exemption
from chatmem.store.state_coverage import SPEAKERS_OWNER
from chatmem.store.stored_values import json_text
from chatmem.store.writer_state import as_copied
from chatmem.text import profile_name

if TYPE_CHECKING:
    from chatmem.store import Store

_SESSIONS = "session_id IN (SELECT id FROM sessions WHERE {chosen})"
_MESSAGES = f"message_id IN (SELECT id FROM messages WHERE {_SESSIONS})"
_FACTS = "(session_id IN ({ids}) OR session_id IS NULL AND source_session_id IN ({ids}))"


@dataclass(frozen=True)
class _Table:
    name: str
    where: str
    """Which rows belong to the chosen sessions ({chosen}: a condition on sessions)."""
    remap: dict[str, str] = field(default_factory=dict)
    """column → the table whose new ids it takes."""
    keyed: bool = True
    """Has its own `id` (the target assigns a new one)."""


# In dependency order: a row's references are copied before it.
TABLES = (
    _Table("sessions", "{chosen}"),
    _Table("session_prompts", _SESSIONS, {"session_id": "sessions"}, keyed=False),
    _Table("messages", _SESSIONS, {"session_id": "sessions"}),
    _Table("token_counts", _MESSAGES, {"message_id": "messages"}, keyed=False),
    _Table("message_vectors", _MESSAGES, {"message_id": "messages"}, keyed=False),
    _Table("turns", _SESSIONS, {"session_id": "sessions", "user_message_id": "messages",
                                "assistant_message_id": "messages"}),
    _Table("summaries", _SESSIONS, {"session_id": "sessions", "last_message_id": "messages"}),
    _Table("facts", "", {"session_id": "sessions", "source_message_id": "messages",
                         "source_session_id": "sessions"}),
    _Table("fact_history", "", {"fact_id": "facts", "source_session_id": "sessions"}),
    _Table("strategy_state", _SESSIONS, {"session_id": "sessions"}, keyed=False),
    _Table("probes", _SESSIONS, {"session_id": "sessions"}),
    # Kept once per session by hash: a copied session's are its own rows, as its turns are.
    _Table("images", _SESSIONS, {"session_id": "sessions"}, keyed=False),
)
_SKIPPED = frozenset({"owner", "erasures", "writer"})
"""The PostgreSQL row's owner is whoever copies it in (row-level security checks it), and
so is its writer (the server stamps it: who wrote a message kept by `_kept_writers`).
A session's `erasures` only tells the engines chatting in it then whether text left its
memory meanwhile; none chats in the copy yet, so it starts at the target's default (and a
PostgreSQL role may not insert the column: p008 grants only its UPDATE)."""


class SkipReason(StrEnum):
    NAME_TAKEN = "name-taken"
    """Another session of the copy has its name (one's own, and one shared with one)."""
    INVALID_NAME = "invalid-name"
    """A name chatmem refuses (written with plain SQL, or a replay's unfinished one: copied,
    it would be hidden and deleted by the next replay)."""


@dataclass(frozen=True)
class SkippedSession:
    name: str
    reason: SkipReason
    owner: str | None = None
    """Its owner, when it is another role's (PostgreSQL)."""
    shared: bool = False
    """Whether its owner shared it with the role copying: else that role reads it because
    row security does not bind it (a superuser, BYPASSRLS; `CopyReport.reader`)."""

    @property
    def shared_by(self) -> str | None:
        return self.owner if self.shared else None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "reason": self.reason.value, "shared_by": self.shared_by,
                "owner": self.owner}


@dataclass(frozen=True)
class CopyReport:
    source: str
    target: str
    sessions: list[str]
    """The sessions copied."""
    rows: dict[str, int]
    skipped: list[SkippedSession] = field(default_factory=list)
    reader: tuple[str, Exemption] | None = None
    """The role that read the source and why row security does not bind it, when it does
    not: it reads every person's sessions, shared with it or not."""

    def to_json(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "sessions": self.sessions,
                "rows": self.rows, "skipped": [s.to_json() for s in self.skipped]}


@dataclass(frozen=True)
class _Listed:
    id: int
    name: str
    shared_by: str | None


def _sessions_named(names: Sequence[str]) -> str:
    if len(names) == 1:
        return f"a session {names[0]!r}"
    return f"{len(names)} of these sessions: " + ", ".join(repr(n) for n in names)


def copy_sessions(source: Store, target: Store,
                  names: Sequence[str] = ()) -> CopyReport:
    """Copy the sessions `names` (default: every session `source` shows) into `target`,
    all or nothing; a name `target` already has is refused before anything is written.
    A session the target could not tell from another (the same name) or could not name
    (a name chatmem refuses) is left out and listed in the report's `skipped`."""
    listed = _listed(source, names)
    reader = row_security_exemption(source.connection)
    chosen: dict[str, _Listed] = {}
    skipped: list[SkippedSession] = []
    for session in listed:
        valid = is_session_name(session.name) and not is_reserved(session.name)
        if valid and normal_name(session.name) not in chosen:
            chosen[normal_name(session.name)] = session
            continue
        reason = SkipReason.INVALID_NAME if not valid else SkipReason.NAME_TAKEN
        skipped.append(SkippedSession(session.name, reason, session.shared_by,
                                      _shared(source, session)))
    # Every clash at once: one named at a time took a rename and a refused copy for each.
    taken = [s.name for key, s in chosen.items() if target.sessions.find_session(key)]
    if taken:
        others = "" if len(taken) == len(chosen) else ", or name the others to copy"
        raise UsageError(f"{target.location} has {_sessions_named(taken)} already; rename "
                         f"(chatmem sessions rename) and copy again{others}")
    ids = [session.id for session in chosen.values()]
    if not ids:
        return CopyReport(source.location, target.location, [],
                          {table.name: 0 for table in TABLES}, skipped, reader)
    marks = ", ".join("?" for _ in ids)
    origin = _Origin({session.id: session.name for session in chosen.values()})
    repeated = _repeated_profile_facts(source, target, marks, ids)
    new_ids: dict[str, dict[int, int]] = {}
    counts: dict[str, int] = {}
    writers: dict[int, dict[int, str]] = {}
    theirs = _others(source, ids)
    with target.write():
        for table in TABLES:
            where, params = _rows_of(table, marks, ids, new_ids)
            if table.name in DERIVED and source.db.kind == "postgresql":
                # Only the derived memory the copier reads as the session's (p025): a write
                # grantee's summary copied in would be the copier's own in the target. A
                # group chat's kept speakers are trusted row by row, as they are read.
                where = (f"({where}) AND ({table.name}.strategy = '{SPEAKERS_OWNER}' AND"
                         f" {trusted_by_reader(table.name)} OR {table.name}.strategy <>"
                         f" '{SPEAKERS_OWNER}' AND"
                         f" {trusted_memory(table.name, f'{table.name}.strategy')})")
            if table.name == "token_counts":
                # Nor a count the copier does not read as hers (p026).
                where = f"({where}){trusted_count(source.db.kind, table.name)}"
            if table.name == "message_vectors":
                # Nor a vector (p027).
                where = f"({where}){trusted_index(source.db.kind, table.name)}"
            rows = fetch_rows(source.db, f"SELECT * FROM {table.name} WHERE {where} ORDER BY "
                              f"{'id' if table.keyed else '1'}", params)
            if table.name == "strategy_state" and source.db.kind == "postgresql":
                rows = as_copied(rows, str(fetch_value(source.db, "SELECT current_user")))
            if table.name == "facts":
                rows = [_stated_by(row, theirs) for row in rows
                        if int(row["id"]) not in repeated]
            if table.name == "messages":
                rows = [_as_read(row) for row in rows]
            counts[table.name] = len(rows)
            new_ids[table.name] = _insert(target, table, rows, new_ids, origin)
            if table.name == "messages":
                writers = _kept_writers(rows, new_ids["sessions"],
                                        _owners_words(source, rows, theirs))
        # After strategy_state, whose copied rows these may replace.
        for session_id, speakers in writers.items():
            steps.keep_speakers(target.db, session_id, speakers)
    return CopyReport(source.location, target.location, [s.name for s in chosen.values()],
                      counts, skipped, reader)


def _as_read(row: dict[str, Any]) -> dict[str, Any]:
    """A message row with the label its writer's name adds where it is read (MessageRecord),
    when another role than its session's owner wrote it: the target stamps its own writer
    (the copier) or has none (a file), and unlabelled his words would read as the user's."""
    writer = row.get("writer")
    if writer is None or writer == row.get("owner") or row["role"] == "assistant":
        return row
    return row | {"content": as_read(row["role"], row["content"], writer)}


def _kept_writers(rows: list[dict[str, Any]], sessions: dict[int, int],
                  owners: dict[int, str]) -> dict[int, dict[int, str]]:
    """The copied messages another role than their session's owner inserted (PostgreSQL's
    `writer`): new session id → position → that role, kept as the copy's speakers of them
    (the target stamps its own writer on every row it copies in); and those of `owners`
    (message id → the owner of another's session, `_owners_words`), kept as hers."""
    kept: dict[int, dict[int, str]] = {}
    for row in rows:
        writer = row.get("writer")
        if writer is None or writer == row.get("owner"):
            writer = owners.get(int(row["id"]))
        if writer is not None and row["role"] != "assistant" \
                and int(row["session_id"]) in sessions:
            kept.setdefault(sessions[int(row["session_id"])], {})[int(row["position"])] = writer
    return kept


def _others(source: Store, ids: list[int]) -> dict[int, str]:
    """Of the sessions copied, those another role shares with the copier: id → its owner.
    In the copy, whose user is the copier, her words and facts stay hers, as in his fork
    (store.fork): copied as they were, his model was told he is named as she is. A
    superuser's copy of everyone's sessions (a move, a backup) keeps each its owner's."""
    if source.db.kind != "postgresql":
        return {}
    return {int(r["id"]): str(r["owner"]) for r in fetch_rows(
        source.db, f"SELECT s.id, s.owner FROM sessions s WHERE s.id IN"
        f" ({', '.join('?' for _ in ids)}) AND s.owner <> current_user AND EXISTS (SELECT 1"
        " FROM session_shares h WHERE h.session_id = s.id AND h.owner = s.owner"
        " AND h.grantee = current_user)", ids)}


def _owners_words(source: Store, rows: list[dict[str, Any]],
                  theirs: dict[int, str]) -> dict[int, str]:
    """Of the messages copied out of another's session (`theirs`), those its owner said
    (no speaker named: neither a turn's, a kept one, nor another writer): id → the owner."""
    said: dict[int, str] = {}
    for session_id, owner in theirs.items():
        ids = [int(r["id"]) for r in rows
               if int(r["session_id"]) == session_id and r["role"] != "assistant"]
        named = source.history.speakers(session_id, ids)
        said |= {i: owner for i in ids if i not in named}
    return said


def _stated_by(row: dict[str, Any], theirs: dict[int, str]) -> dict[str, Any]:
    """A session fact of another's session (`theirs`) copied as its owner's when it names no
    speaker (hers, read so in her session), as store.fork copies it."""
    owner = theirs.get(int(row["session_id"])) if row.get("session_id") is not None else None
    if owner is not None and row.get("scope") == "session" and row.get("speaker") is None:
        return row | {"speaker": owner}
    return row


def _repeated_profile_facts(source: Store, target: Store, marks: str,
                            ids: list[int]) -> set[int]:
    """The source's live profile facts the copy brings that the target's profile (or the
    copy itself) holds already with the same value, by id: left out, as an archive's
    import leaves them. One it holds with another value is refused before anything is
    written (repeated_profile_facts), naming the profile and the key."""
    rows = fetch_rows(source.db, f"SELECT * FROM facts WHERE {_FACTS.format(ids=marks)}"
                      " AND scope = 'user' AND session_id IS NULL ORDER BY id", [*ids, *ids])
    now = target.connection.clock()
    facts = [FactRecord.from_row(row) for row in rows]
    facts = [f for f in facts if is_live(f.deleted_at, f.expires_at, now)]
    live = [fact for user in dict.fromkeys(profile_name(f.user or "") for f in facts)
            for fact in target.facts.facts(user=user)]
    repeated = repeated_profile_facts(
        [ProfileValue(f.user or "", f.key, f.value) for f in facts], live,
        source=source.location, here=f"in {target.location}", copying=True)
    return {facts[i].id for i in repeated}


def _shared(source: Store, session: _Listed) -> bool:
    """Whether another's `session` is shared with the role copying (by its owner): a role
    row security does not bind reads it all the same."""
    if session.shared_by is None:
        return False
    return fetch_value(source.db, "SELECT 1 FROM session_shares WHERE session_id = ? AND"
                       " grantee = current_user AND owner = ?",
                       [session.id, session.shared_by]) is not None


def _listed(source: Store, names: Sequence[str]) -> list[_Listed]:
    """The sessions to copy, each once, one's own before one shared under the same name."""
    db = source.db
    if names:
        found: dict[int, _Listed] = {}
        for name in dict.fromkeys(names):
            record = source.sessions.find_session(name)
            if record is None:
                raise NotFound(f"no session {name!r} in {source.location}")
            if record.id not in found:
                # Its owner, when shared: a name skipped says whose it was (`ann/trip`, not
                # the user's own `trip`).
                shared_by = fetch_value(db, f"SELECT {db.shared_by} FROM sessions WHERE id = ?",
                                        [record.id])
                found[record.id] = _Listed(record.id, record.name, shared_by)
        return list(found.values())
    # PostgreSQL's ids are random: sessions are listed by when they were made.
    rows = fetch_rows(db, f"SELECT id, name, {db.shared_by} AS shared_by FROM sessions"
                          f" ORDER BY {db.own_rows_first}created_at, id")
    if not rows:
        raise NotFound(f"no session to copy in {source.location}")
    return [_Listed(int(r["id"]), str(r["name"]), r["shared_by"]) for r in rows]


def _rows_of(table: _Table, marks: str, ids: list[int],
             new_ids: dict[str, dict[int, int]]) -> tuple[str, list[Any]]:
    if table.name == "facts":
        return _FACTS.format(ids=marks), [*ids, *ids]
    if table.name == "fact_history":
        facts = list(new_ids["facts"]) or [0]
        return f"fact_id IN ({', '.join('?' for _ in facts)})", facts
    chosen = f"id IN ({marks})"
    return table.where.format(chosen=chosen), list(ids) * table.where.count("{chosen}")


@dataclass
class _Origin:
    """Which source session a row comes from, so a row the target refuses names it."""

    names: dict[int, str]
    """Source session id → its name."""
    message_sessions: dict[int, int] = field(default_factory=dict)
    """Source message id → its session's id (filled as messages are copied)."""

    def session_of(self, table: _Table, row: dict[str, Any]) -> int | None:
        if table.name == "sessions":
            return int(row["id"])
        for column in ("session_id", "source_session_id"):
            if row.get(column) is not None:
                return int(row[column])
        if row.get("message_id") is not None:
            return self.message_sessions.get(int(row["message_id"]))
        return None

    def refused(self, error: StoreError, session_id: int | None) -> StoreError:
        """`error`, saying which session's rows the target refused (none was copied)."""
        name = self.names.get(session_id) if session_id is not None else None
        if name is not None:
            error.message = f"session {name!r} could not be copied (no session was): {error}"
        return error


def _insert(target: Store, table: _Table, rows: list[dict[str, Any]],
            new_ids: dict[str, dict[int, int]], origin: _Origin) -> dict[int, int]:
    """Insert `rows` into `target` with their references remapped; old id → new id."""
    if not rows:
        return {}
    columns = [c for c in _columns(target, table.name) if c in rows[0] and c not in _SKIPPED
               and not (table.keyed and c == "id")]
    names = ", ".join(f'"{c}"' for c in columns)
    sql = (f"INSERT INTO {table.name} ({names}) VALUES ({', '.join('?' for _ in columns)})")
    mapped: dict[int, int] = {}
    words: dict[int, list[tuple[int, str]]] = {}
    for row in rows:
        values = [_value(row, column, table, new_ids) for column in columns]
        session_id = origin.session_of(table, row)
        try:
            if table.keyed:
                mapped[int(row["id"])] = int(
                    target.db.execute(sql + " RETURNING id", values).fetchall()[0][0])
            else:
                target.db.execute(sql, values)
        except StoreError as e:
            raise origin.refused(e, session_id) from None
        if table.name == "messages" and session_id is not None:
            origin.message_sessions[int(row["id"])] = session_id
            words.setdefault(session_id, []).append(
                (mapped[int(row["id"])], fts.message_index_text(row["role"], row["content"])))
    # One statement a session: the target's word index refusing one names it.
    for session_id, entries in words.items():
        try:
            target.db.index_words(entries)
        except StoreError as e:
            raise origin.refused(e, session_id) from None
    return mapped


def _value(row: dict[str, Any], column: str, table: _Table,
           new_ids: dict[str, dict[int, int]]) -> Any:
    value = row[column]
    if isinstance(value, memoryview):
        value = bytes(value)
    if value is None:
        return None
    if column in table.remap:
        return new_ids[table.remap[column]].get(int(value))
    if table.name == "summaries" and column == "covered_ids":
        messages = new_ids["messages"]
        return json_text([messages[int(i)] for i in loads(value) if int(i) in messages])
    return value


def _columns(target: Store, table: str) -> list[str]:
    cursor = target.db.execute(f"SELECT * FROM {table} WHERE 1 = 0")
    return [d[0] for d in cursor.description]
