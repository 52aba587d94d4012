"""Write steps more than one table group takes, each inside the caller's transaction.

A turn appends messages and their token counts, a fork inserts a session and
its prompts, retention erases sessions as delete does: each step is written
once here, over the backend, rather than as one table group's private method
that another calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from chatmem import fts
from chatmem.errors import SessionGone, StoreConflict, StoreError, UsageError
from chatmem.store.backend import Backend
from chatmem.store.recall import pause
from chatmem.store.session_names import check_session_name, normal_name
from chatmem.store.state_coverage import SPEAKERS_OWNER
from chatmem.store.stored_values import json_text
from chatmem.text import is_valid, profile_name

MESSAGES_A_STATEMENT = 500
"""Messages one INSERT adds (8 parameters each, 9 for a fork's on PostgreSQL: within
SQLite's 32,766 and PostgreSQL's 65,535): a turn's, an import's, a fork's copies
(insert_messages)."""


def insert_id(db: Backend, sql: str, params: Sequence[Any]) -> int:
    """Run an INSERT of one row and return its new id."""
    return int(db.execute(sql + " RETURNING id", list(params)).fetchall()[0][0])


def insert_messages(db: Backend, rows: Sequence[Sequence[Any]], *,
                    copied: bool = False) -> dict[int, int]:
    """Insert message rows (session_id, position, turn, role, content, external_id,
    created_at, gap_s, and when `copied` the id of the message each copies or None:
    PostgreSQL's `copied_from`, postgres_writers; at most MESSAGES_A_STATEMENT) in one
    statement; position → new id (positions are unique in a session)."""
    width = 9 if copied else 8
    inserted = db.execute(
        "INSERT INTO messages (session_id, position, turn, role, content, external_id,"
        f" created_at, gap_s{', copied_from' if copied else ''}) VALUES "
        + ", ".join(["(" + ", ".join(["?"] * width) + ")"] * len(rows))
        + " RETURNING position, id", [value for row in rows for value in row]).fetchall()
    return {int(position): int(message_id) for position, message_id in inserted}


def append_messages(db: Backend, session_id: int, messages: Iterable[Mapping[str, Any]],
                    now: Callable[[], str]) -> list[int]:
    """Insert messages after the session's last one, indexed; returns their ids."""
    return append_numbered(db, session_id, messages, now)[0]


LastMessage = tuple[int, int, str | None, int]
"""A session's last message as append_numbered numbers after it: position, turn,
created_at, superseded ((0, 0, None, 0): none)."""
# Turns never decrease with position: the last message holds both maxima, and the
# (session_id, position) index finds it without reading the session (a replaced turn's
# messages hold the same number as its replacement's).
_LAST_MESSAGE = ("SELECT position, turn, created_at, superseded FROM messages"
                 " WHERE session_id = ? ORDER BY position DESC LIMIT 1")


def append_numbered(db: Backend, session_id: int, messages: Iterable[Mapping[str, Any]],
                    now: Callable[[], str], *,
                    last: LastMessage | None = None) -> tuple[list[int], int]:
    """`append_messages`, and the history's last turn after it (the last one's turn: no
    message in history is past it), which a committed turn records without a read. A
    message's "speaker" (a group chat member's, no turn's input) is kept (keep_speakers).
    `last`: the session's last message, read under this write lock (kept_and_last)."""
    if last is None:
        row = db.execute(_LAST_MESSAGE, [session_id]).fetchone()
        position, turn, last_time, superseded = row or (0, 0, None, 0)
    else:
        position, turn, last_time, superseded = last
    if turn and superseded:
        # A replaced turn's messages (superseded, only ever at the end) keep their number
        # out of history: its replacement takes it, so the history's turns stay 1, 2, 3 …
        # with no gap for fork --at-turn and a window's "dropped turn" to count. The last
        # message in history is that turn's: a second read only after a replaced turn.
        live = db.execute(
            "SELECT turn FROM messages WHERE session_id = ? AND superseded = 0"
            " ORDER BY position DESC LIMIT 1", [session_id]).fetchone()
        turn = live[0] if live else 0
    rows: list[list[Any]] = []
    speakers: dict[int, str] = {}
    for message in messages:
        position += 1
        if message["role"] == "user" or turn == 0:
            turn += 1
        if message.get("speaker"):
            speakers[position] = message["speaker"]
        created_at = message.get("ts") or now()
        rows.append([session_id, position, turn, message["role"], message["content"],
                     message.get("id"), created_at, pause(last_time, created_at)])
        last_time = created_at
    # A chunk of messages a statement (a turn's two: one).
    ids: list[int] = []
    for start in range(0, len(rows), MESSAGES_A_STATEMENT):
        chunk = rows[start : start + MESSAGES_A_STATEMENT]
        found = insert_messages(db, chunk)
        ids += [found[row[1]] for row in chunk]
    db.index_words([(message_id, fts.message_index_text(row[3], row[4]))
                    for message_id, row in zip(ids, rows, strict=True)])
    keep_speakers(db, session_id, speakers)
    db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", [now(), session_id])
    return ids, turn


def keep_speakers(db: Backend, session_id: int, speakers: Mapping[int, str]) -> None:
    """Keep who said the session's messages at `speakers`' positions (position → a group
    chat member's name) where no turn of it records them (state_coverage.SPEAKERS_OWNER)."""
    if speakers:
        db.executemany(
            "INSERT INTO strategy_state (session_id, strategy, key, value) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (session_id, strategy, key) DO UPDATE SET value = excluded.value",
            [(session_id, SPEAKERS_OWNER, str(position), json_text(name))
             for position, name in speakers.items()])


def check_new_name(db: Backend, name: str, *, unfinished: bool = False) -> None:
    """Raise unless `name` is a valid name none of the user's own sessions has yet (one
    shared with them under it is `OWNER/NAME`, and takes nothing of theirs); a replay's
    unfinished name only when `unfinished`."""
    check_session_name(name, unfinished=unfinished)
    if not is_valid(name):
        raise UsageError(f"session name {name!r} is not valid UTF-8")
    if db.execute(f"SELECT 1 FROM sessions WHERE name = ? AND {db.own_rows}",
                  [normal_name(name)]).fetchone():
        raise StoreError(f"a session named {name!r} already exists")


def insert_session(
    db: Backend, name: str, strategy: str, params: Mapping[str, Any], *, stamp: str,
    provider: str | None, model: str | None, system: str | None, user: str | None,
    tokenizer: str | None = None,
) -> int:
    """Insert a session row and its first prompt; returns its id."""
    name = normal_name(name)
    try:
        session_id = insert_id(
            db,
            "INSERT INTO sessions (name, strategy, params, provider, model, system, \"user\","
            " tokenizer, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [name, strategy, json_text(dict(params)), provider, model, system,
             None if user is None else profile_name(user), tokenizer, stamp, stamp],
        )
    except StoreConflict:
        # Another process took the name since check_new_name.
        raise StoreError(f"a session named {name!r} already exists") from None
    set_prompt(db, session_id, 1, system)
    return session_id


def set_prompt(db: Backend, session_id: int, from_turn: int, system: str | None) -> None:
    """Record the system prompt in effect from `from_turn` on."""
    db.execute(
        "INSERT INTO session_prompts (session_id, from_turn, system) VALUES (?, ?, ?)"
        " ON CONFLICT (session_id, from_turn) DO UPDATE SET system = excluded.system",
        [session_id, from_turn, system],
    )


def count_erasure(db: Backend, session_ids: Iterable[int]) -> None:
    """Say that text left these sessions' memory (`sessions.erasures`), so an engine kept
    open on one of them, here or in another process, drops what it derived from it."""
    ids = sorted(set(session_ids))
    if ids:
        db.execute(f"UPDATE sessions SET erasures = erasures + 1"
                   f" WHERE id IN ({', '.join('?' * len(ids))})", ids)


def erase_session_rows(db: Backend, session_id: int) -> None:
    """Delete a session; its rows cascade (messages, turns, summaries, session facts,
    vectors, probes, state), its index entries and earlier fact values do not."""
    db.unindex_session_words([session_id])
    # Earlier values of profile facts stated in this session go with it.
    db.execute("DELETE FROM fact_history WHERE source_session_id = ?", [session_id])
    db.execute("DELETE FROM sessions WHERE id = ?", [session_id])


MEMORY_NOT_UPDATED = "its memory was not updated"


def kept_and_last(db: Backend, session_id: int,
                  consequence: str = MEMORY_NOT_UPDATED) -> tuple[int, LastMessage]:
    """`check_session_kept`, with the session's last message as `append_numbered` reads
    it: one statement of a turn's write, not two (each is ~10 us of the turn)."""
    row = db.execute(
        "SELECT s.erasures, m.position, m.turn, m.created_at, m.superseded FROM sessions s"
        f" LEFT JOIN ({_LAST_MESSAGE}) m ON 1 = 1 WHERE s.id = ?",
        [session_id, session_id]).fetchone()
    if row is None:
        raise SessionGone(None, consequence)
    erasures, position, turn, created_at, superseded = row
    if position is None:
        return int(erasures), (0, 0, None, 0)
    return int(erasures), (position, turn, created_at, superseded)


def check_session_kept(db: Backend, session_id: int,
                       consequence: str = MEMORY_NOT_UPDATED) -> int:
    """Under the write lock, before a row of the session is written: a session another
    process deleted meanwhile (or stopped sharing) is said as SessionGone, not met as the
    database's refusal (a foreign key on SQLite, row security on PostgreSQL), whose words
    a memory update passed on as "will retry next turn". Its erasures count (`erasures`)."""
    row = db.execute("SELECT erasures FROM sessions WHERE id = ?", [session_id]).fetchone()
    if row is None:
        raise SessionGone(None, consequence)
    return int(row[0])
