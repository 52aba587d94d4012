"""Append-only messages, their full-text index rows and cached token counts."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from chatmem.speakers import relayed_by
from chatmem.store import steps
from chatmem.store.batches import in_batches
from chatmem.store.connection import Connection, fetch_rows, fetch_value
from chatmem.store.postgres_writers import trusted_by_reader, written_by_owner
from chatmem.store.records import (
    MOST_INTEGER,
    AccessLevel,
    MessageRecord,
    as_read,
    counted_messages,
    message_columns,
    writer_column,
)
from chatmem.store.state_coverage import SPEAKERS_OWNER

SPOKEN = '%"speaker"%'
"""A turn context naming a speaker, found by LIKE before it is parsed."""


class MessageTables:
    """A session's append-only messages and their cached token counts (`store.history`)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._db = connection.db

    def turn_count(self, session_id: int) -> int:
        return int(
            fetch_value(self._db, "SELECT max(turn) FROM messages WHERE session_id = ?"
                        " AND superseded = 0", [session_id]) or 0
        )

    def messages(
        self, session_id: int, first_turn: int = 1, last_turn: int | None = None
    ) -> list[MessageRecord]:
        # A replaced turn's messages (superseded) are stored but no longer history.
        sql = (f"SELECT {message_columns(self._db.kind)} FROM messages WHERE session_id = ?"
               " AND turn >= ?"
               " AND superseded = 0")
        params: list[Any] = [session_id, first_turn]
        if last_turn is not None:
            sql += " AND turn <= ?"
            params.append(last_turn)
        return [MessageRecord(*row) for row in self._db.execute(sql + " ORDER BY position",
                                                               params)]

    def messages_of(self, session_ids: Iterable[int],
                    last_turn: int) -> dict[int, list[MessageRecord]]:
        """`messages` of turns 1..`last_turn` of each of `session_ids` (id → its messages, in
        order; none held: left out): one statement, where one a session was one for each of
        serve's branches of a chat no id names (`chat_openings.branched_from`)."""
        return self._by_session(session_ids, lambda marks: (
            f"SELECT {message_columns(self._db.kind)} FROM messages"
            f" WHERE session_id IN ({marks})"
            " AND turn <= ? AND superseded = 0 ORDER BY session_id, position"), [last_turn])

    def last_turns_of(self, session_ids: Iterable[int],
                      turns: int) -> dict[int, list[MessageRecord]]:
        """The messages of the last `turns` turns (a replaced turn's left out) of each of
        `session_ids` (id → its messages, in order; none held: left out): one statement for
        all, as `messages` from `turn_count` - `turns` + 1 on reads one."""
        return self._by_session(session_ids, lambda marks: (
            f"SELECT {message_columns(self._db.kind, 'm')} FROM messages AS m"
            f" WHERE session_id IN ({marks})"
            " AND superseded = 0 AND turn > (SELECT max(turn) FROM messages AS x"
            " WHERE x.session_id = m.session_id AND x.superseded = 0) - ?"
            " ORDER BY session_id, position"), [turns])

    def _by_session(self, session_ids: Iterable[int], sql: Callable[[str], str],
                    params: list[Any]) -> dict[int, list[MessageRecord]]:
        """The messages `sql` (given the chunk's placeholders, followed by `params`) reads for
        `session_ids`, by session id in the order read, in batches the server accepts."""
        found: dict[int, list[MessageRecord]] = {}
        for chunk, marks in in_batches(sorted(set(session_ids))):
            for row in self._db.execute(sql(marks), [*chunk, *params]):
                message = MessageRecord(*row)
                found.setdefault(message.session_id, []).append(message)
        return found

    def counted_messages(self, session_id: int, first_turn: int, last_turn: int,
                         tokenizer: str) -> list[tuple[MessageRecord, int | None]]:
        """`messages` of turns `first_turn`..`last_turn`, each with its cached token count
        under `tokenizer` (None: not counted there): one statement, where the messages and
        then their counts were two for every context a turn builds."""
        rows = self._db.execute(
            f"{counted_messages(self._db.kind)} WHERE m.session_id = ? AND m.turn >= ?"
            " AND m.superseded = 0 AND m.turn <= ?"
            " ORDER BY m.position", [tokenizer, session_id, first_turn, last_turn])
        return [(MessageRecord(*row), tokens) for *row, tokens in rows]

    def messages_in_turns(self, session_id: int, turns: Iterable[int]) -> list[MessageRecord]:
        """The messages of the session's `turns` (a replaced turn's left out), in order:
        a few turns far apart read through the turn index, not the whole span between."""
        wanted = sorted(set(turns))
        found: list[MessageRecord] = []
        for chunk, marks in in_batches(wanted):
            # "+position": ordered by the position index, SQLite read the whole session.
            found += [MessageRecord(*row) for row in self._db.execute(
                f"SELECT {message_columns(self._db.kind)} FROM messages WHERE session_id = ?"
                f" AND turn IN ({marks}) AND superseded = 0 ORDER BY +position",
                [session_id, *chunk])]
        return found

    def message_count(self, session_id: int, *, at_most: int) -> int:
        """How many messages the session's history holds, counted no further than
        `at_most`: a caller comparing it with a list that long reads no more of the
        history than the list holds, however long the history is."""
        return int(fetch_value(
            self._db, "SELECT count(*) FROM (SELECT 1 FROM messages WHERE session_id = ?"
            " AND superseded = 0 LIMIT ?) AS held", [session_id, max(at_most, 0)]) or 0)

    def contents(self, session_id: int, message_ids: Iterable[int]) -> dict[int, str]:
        """The text of the session's messages with `message_ids` (id → content), a replaced
        turn's included: what a recorded context's recall candidates said."""
        return self._column(session_id, message_ids, "content")

    def placed(self, session_id: int, message_ids: Iterable[int]
               ) -> dict[int, tuple[int, str, str]]:
        """The position, role and text of the session's messages with `message_ids` (id →
        (position, role, content)), a replaced turn's included: what a plugin strategy's
        build sends as stored is checked against (memory.guards), and where the vectors of
        the messages it asks for lie (memory.stored_search)."""
        ids = sorted({i for i in message_ids if 0 < i <= MOST_INTEGER})
        found: dict[int, tuple[int, str, str]] = {}
        # The text as every reader gets it (a grantee's after his label on PostgreSQL):
        # the history a plugin's build sends holds it so, and it must match.
        writer = writer_column(self._db.kind, "messages") or ", NULL"
        for chunk, marks in in_batches(ids):
            for message_id, position, role, content, wrote in self._db.execute(
                    f"SELECT id, position, role, content{writer} FROM messages"
                    f" WHERE session_id = ? AND id IN ({marks})", [session_id, *chunk]):
                found[message_id] = (position, role, as_read(role, content, wrote))
        return found

    def external_ids(self, session_id: int, message_ids: Iterable[int]) -> dict[int, str]:
        """The transcript ids of the session's messages with `message_ids` (id → external
        id), for those that have one: what a probe's expect_ids and eval's found_ids name."""
        return self._column(session_id, message_ids, "external_id")

    def created_times(self, session_id: int, message_ids: Iterable[int]) -> dict[int, str]:
        """When the session's messages with `message_ids` were said, as stored (id → time
        text): what a strategy reads through its history's `said_at`."""
        return self._column(session_id, message_ids, "created_at")

    def asked(self, session_id: int, message_ids: Iterable[int]) -> set[int]:
        """Of the session's `message_ids`, those a request recorded in the session stored as
        its input: not an imported transcript's, a fork's copy or a client's adopted history.
        None in a session another role shares with the user: its owner's "my name is …" is
        not theirs (a write share's grantee's own turns there name him as their speaker)."""
        access = self._db.session_access(session_id)
        if access is None or access.level is not AccessLevel.OWN:
            return set()
        ids = sorted({i for i in message_ids if 0 < i <= MOST_INTEGER})
        found: set[int] = set()
        for chunk, marks in in_batches(ids):
            found.update(row[0] for row in self._db.execute(
                # "+session_id": by the session's index, SQLite read every turn of it.
                f"SELECT user_message_id FROM turns WHERE +session_id = ?"
                f" AND user_message_id IN ({marks}){self._by_owner('turns')}",
                [session_id, *chunk]))
        return found - set(self._written_by_others(session_id, ids))

    def speakers(self, session_id: int, message_ids: Iterable[int]) -> dict[int, str]:
        """Of the session's `message_ids` a request stored as its input, those a group chat's
        member said (id → the speaker the request named, its turn context's "speaker"), and
        of the others those a request or a fork kept a speaker of (SPEAKERS_OWNER): not the
        user's, whoever the text says is speaking. A message another role inserted into the
        session (PostgreSQL's `writer`) is that role's, whatever any row names."""
        ids = sorted({i for i in message_ids if 0 < i <= MOST_INTEGER})
        found: dict[int, str] = {}
        for chunk, marks in in_batches(ids):
            # LIKE first: a single user's turns (nearly all) are not parsed at all.
            for message_id, context in self._db.execute(
                    f"SELECT user_message_id, context FROM turns WHERE +session_id = ?"
                    f" AND user_message_id IN ({marks}) AND context LIKE ?"
                    f"{self._by_owner('turns')}", [session_id, *chunk, '%"speaker"%']):
                speaker = _speaker(context)
                if speaker is not None:
                    found[message_id] = speaker
        # A kept speaker over a turn's: a copy keeps who inserted a message (a grantee, on
        # PostgreSQL) by position, whatever the turn it copied names (copying._kept_writers).
        return found | self._kept_speakers(session_id, ids) \
            | self._written_by_others(session_id, ids)

    def speakers_by_position(self, session_id: int) -> dict[int, str]:
        """The speakers the session keeps by message position (steps.keep_speakers), in one
        read: few messages of a group chat, none of a single user's."""
        kept: dict[int, str] = {}
        # On PostgreSQL only as the reader or the session's owner kept them (p025's
        # `writer`): a write share's grantee who kept a speaker of her message by plain SQL
        # made her words another's (out of her profile, named as his in her context).
        trusted = (f" AND {trusted_by_reader('strategy_state')}"
                   if self._db.kind == "postgresql" else "")
        for row in fetch_rows(self._db, "SELECT key, value FROM strategy_state"
                              f" WHERE session_id = ? AND strategy = ?{trusted}",
                              [session_id, SPEAKERS_OWNER]):
            speaker = _speaker(f'{{"speaker": {row["value"]}}}')
            if speaker is not None and str(row["key"]).isdigit():
                kept[int(row["key"])] = speaker
        return kept

    def turn_speakers(self, session_id: int) -> dict[int, str]:
        """Every input of the session's turns a group chat's member said (message id → the
        speaker), in one read: a fork copies them all, whatever the session's length."""
        found: dict[int, str] = {}
        for message_id, context in self._db.execute(
                "SELECT user_message_id, context FROM turns WHERE session_id = ?"
                f" AND user_message_id IS NOT NULL AND context LIKE ?{self._by_owner('turns')}",
                [session_id, '%"speaker"%']):
            speaker = _speaker(context)
            if speaker is not None:
                found[message_id] = speaker
        return found | self._written_by_others(session_id, None)

    def written_by_others(self, session_id: int) -> dict[int, str]:
        """Every message of the session another role than its owner inserted (id → that
        role), a reply left out (`_written_by_others`)."""
        return self._written_by_others(session_id, None)

    def _by_owner(self, table: str) -> str:
        """` AND` a condition true of a row of `table` (messages, turns) its session's owner
        inserted: on PostgreSQL, a row a write share's grantee inserted (by plain SQL too)
        names what he chose, not who spoke. Every row of a file is its user's."""
        if self._db.kind != "postgresql":
            return ""
        return f" AND {written_by_owner(table)}"

    def _written_by_others(self, session_id: int, ids: list[int] | None) -> dict[int, str]:
        """Of the session's messages with `ids` (None: all), those another role than its
        owner inserted (id → that role: PostgreSQL's `writer`, which no role writes). Not a
        reply: the words stored are the model's (speakers.with_speaker)."""
        if self._db.kind != "postgresql" or ids == []:
            return {}
        # With the speaker his own turn of it names, believed only as relayed through him
        # (`carol (via bob)`, speakers.relayed): a group chat his client relays.
        others = ("SELECT m.id, m.writer, (SELECT t.context FROM turns t WHERE"
                  " t.session_id = m.session_id AND t.user_message_id = m.id"
                  " AND t.writer = m.writer AND t.context LIKE ? LIMIT 1)"
                  " FROM messages m WHERE m.session_id = ? AND m.role <> 'assistant'"
                  f" AND NOT {written_by_owner('m')}")
        if ids is None:
            return {int(i): _relayed(str(w), c) for i, w, c in self._db.execute(
                others, [SPOKEN, session_id])}
        found: dict[int, str] = {}
        for chunk, marks in in_batches(ids):
            found.update((int(i), _relayed(str(w), c)) for i, w, c in self._db.execute(
                f"{others} AND m.id IN ({marks})", [SPOKEN, session_id, *chunk]))
        return found

    def _kept_speakers(self, session_id: int, ids: list[int]) -> dict[int, str]:
        """Of `ids`, those with a speaker kept by position (steps.keep_speakers)."""
        kept = self.speakers_by_position(session_id)
        found: dict[int, str] = {}
        if not kept or not ids:
            return found
        for chunk, marks in in_batches(ids):
            for message_id, position in self._db.execute(
                    f"SELECT id, position FROM messages WHERE session_id = ? AND id IN ({marks})",
                    [session_id, *chunk]):
                if position in kept:
                    found[message_id] = kept[position]
        return found

    def _column(self, session_id: int, message_ids: Iterable[int],
                column: str) -> dict[int, str]:
        # A stored context's ids are a hand's or a grantee's to write: one past the store's
        # integer names no message (SQLite raised OverflowError for it, inspect a traceback).
        ids = sorted({i for i in message_ids if 0 < i <= MOST_INTEGER})
        found: dict[int, str] = {}
        for chunk, marks in in_batches(ids):
            for message_id, value in self._db.execute(
                    f"SELECT id, {column} FROM messages WHERE session_id = ? AND id IN ({marks})"
                    f" AND {column} IS NOT NULL", [session_id, *chunk]):
                found[message_id] = value
        return found

    def import_messages(self, session_id: int, messages: Iterable[Mapping[str, Any]]) -> list[int]:
        with self._db.write():
            return steps.append_messages(self._db, session_id, messages, self._connection.now)


def _relayed(writer: str, context: Any) -> str:
    """Who said a message `writer` inserted into another's session: the member his turn's
    `context` names as relayed through him, or he."""
    named = _speaker(context) if context is not None else None
    return named if named is not None and relayed_by(named, writer) else writer


def _speaker(context: Any) -> str | None:
    """The speaker a stored turn context names; a context out of shape (written by hand or
    a write-share grantee) names none, and neither does an empty or non-text value."""
    try:
        data = json.loads(context) if isinstance(context, str) else None
    except (ValueError, RecursionError):
        return None
    speaker = data.get("speaker") if isinstance(data, dict) else None
    return speaker if isinstance(speaker, str) and speaker.strip() else None
