"""What recall's vectors read and write: a session's message vectors per embedding model,
the messages still without them, and vectors found again by the text they embed.

Vectors are stored per (model, message) as float16 blobs: the message's own vector and its
context vector (its vector and the previous message's, summed and normalized; files from
before that hold the two texts embedded together). Their reads are incremental
(`after_id`), so a session's vectors are loaded once per process and then extended by the
messages committed since. `vector_cache` finds a stored vector by the sha256 of the text it
embeds, so the same text (a fork, an import or a replay of a conversation seen before) is
not embedded again; on PostgreSQL, only from the role's own sessions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chatmem.store.backend import Backend
from chatmem.store.batches import in_batches
from chatmem.store.connection import Connection, fetch_value
from chatmem.store.postgres_writers import trusted_entry, trusted_index

CACHE_LOOKUP = 400
"""Digests looked up per statement (well under SQLite's limit of bound values)."""
SHRINK_AFTER = 2_000
"""Vectors read at once (a session's, as recall opens it) past which the connection lets go
of the pages it read (Backend.let_go_of_read_pages): those pages are read once
(recall keeps the vectors in arrays), and held 32 MiB (sqlite_opening.CACHE_KIB) in each
engine a server keeps open on a long history (`chatmem mcp`: three a conversation)."""



@dataclass(frozen=True)
class VectorRow:
    message_id: int
    vector: bytes
    context_vector: bytes
    digest: str | None = None
    """sha256 of the text `vector` embeds: set, the vector is found again by that text.
    (A context vector is derived from two own vectors, never embedded from a text.)"""


@dataclass(frozen=True)
class PositionedVector:
    message_id: int
    position: int
    vector: bytes
    context_vector: bytes


@dataclass(frozen=True)
class VectorBatch:
    """A session's message vectors for one model, read in bulk (VectorTables.vector_batch):
    recall's cache fills an array from them without a Python object per message."""

    positions: list[int]
    vectors: bytes
    """The message vectors (float16), in the order of `positions`, one after another."""
    last_id: int
    """The highest message id read (0: none)."""



@dataclass(frozen=True)
class PendingText:
    """A message without a vector for some model, with the message before it."""

    message_id: int
    content: str
    previous: str | None



def _session_vectors(kind: str) -> str:
    """A session's vectors for one model past a message id, as history has them (a replaced
    turn's are not) and as the reader trusts them (p027: not another role's): vector_rows
    and vector_batch read it, given the model, the session and that id twice.

    Read from the session's messages past that id's (its (session_id, position) index: a
    session's ids grow with its positions, as `last_message_id` takes them), each vector
    looked up by its key. Read from the vectors past that id instead, the look went through
    the vectors of every later message of the history, of every session: each turn of a
    chat with messages of other sessions after its own read all of theirs again (12
    conversations of 2,000 turns: 44 ms and up to 32 MiB of pages a turn, in each engine a
    server keeps open)."""
    return (" FROM messages m CROSS JOIN message_vectors v"
            " WHERE v.message_id = m.id AND v.model = ? AND m.session_id = ?"
            " AND v.message_id > ? AND m.superseded = 0"
            " AND m.position > coalesce((SELECT position FROM messages WHERE id = ?), 0)"
            f"{trusted_index(kind, 'v')} ORDER BY m.position")


def _without(kind: str, model: str, dimensions: int) -> tuple[str, list[object]]:
    """The condition "message m has no vector for `model`", with its parameters. With
    `dimensions` (0: not known yet, as an endpoint's before its first answer), a vector of
    another size counts as none: the embedder changed under the same key (a plugin's new
    version), and the old vectors can be neither ranked against its queries nor summed
    with its new ones, so they are embedded again (they are derived data). A vector the
    reader does not trust (p027: another role's) counts as none, and is embedded again."""
    sized = " AND v.dimensions = ?" if dimensions else ""
    return ("NOT EXISTS (SELECT 1 FROM message_vectors v"
            f" WHERE v.model = ? AND v.message_id = m.id{sized}{trusted_index(kind, 'v')})",
            [model, *([dimensions] if dimensions else [])])


_IN_SESSION = " AND m.session_id = ? AND m.position > 0"
"""A whole session's messages, for a look for those without a vector. The position bound
leads SQLite to the (session_id, position) index: the vectors are then looked up in about
their key's order, pages read once each. Through another index of the session (by gap,
as it chose), the lookups jump around the vectors (1 KB a row): 1.9 s of CPU at 100,000
messages, against 0.4 s."""


class VectorTables:
    """Message vectors per embedding model, and the messages still without them
    (`store.vectors`)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._db = connection.db

    def vector_rows(self, session_id: int, model: str, *,
                    after_id: int = 0) -> list[PositionedVector]:
        """The session's vectors for `model` of messages with an id above `after_id`."""
        return [PositionedVector(*row) for row in self._db.execute(
            "SELECT v.message_id, m.position, v.vector, v.context_vector"
            + _session_vectors(self._db.kind),
            [model, session_id, after_id, after_id])]

    @property
    def shared_identity(self) -> tuple[int, int] | None:
        """What names the vectors this connection reads, the same for every connection of
        this process that reads them alike (a SQLite file's device and inode); None when
        they are its own (PostgreSQL: a role's; a file in memory). Backend.identity."""
        return self._db.identity

    def vector_batch(self, session_id: int, model: str, *, after_id: int = 0,
                     dimensions: int = 0) -> VectorBatch:
        """`vector_rows` without the context vectors, as one buffer: what recall's cache
        reads when a session opens (20,000 vectors) and after each turn (two); with
        `dimensions`, only the vectors of that size (one buffer holds one size)."""
        sql = _session_vectors(self._db.kind)
        params: list[object] = [model, session_id, after_id, after_id]
        if dimensions:
            sql = sql.replace(" ORDER BY", " AND v.dimensions = ? ORDER BY")
            params.append(dimensions)
        rows = self._db.execute("SELECT v.message_id, m.position, v.vector" + sql,
                                params).fetchall()
        if not rows:
            return VectorBatch([], b"", 0)
        ids, positions, vectors = zip(*rows, strict=True)
        batch = VectorBatch([int(p) for p in positions], b"".join(vectors), int(ids[-1]))
        if len(rows) >= SHRINK_AFTER:
            del rows, ids, positions, vectors
            self._db.let_go_of_read_pages()
        return batch

    @property
    def ranks_vectors(self) -> bool:
        """Whether the database finds the nearest vectors itself (nearest_positions)."""
        return self._db.ranks_vectors

    def nearest_positions(self, session_id: int, model: str, dimensions: int,
                          last_position: int, query: Sequence[float],
                          limit: int) -> list[int] | None:
        """Positions (up to `last_position`) holding the session's `limit` best vectors for
        `query` by the sum of the message's and its context's cosine, among a few more;
        None when the database has no vector index (the caller ranks every vector)."""
        return self._db.nearest_vectors(model, dimensions, session_id, last_position, query,
                                       limit)

    def vectors_at(self, session_id: int, model: str,
                   positions: Iterable[int]) -> list[PositionedVector]:
        """The session's vectors for `model` of the messages at `positions` that are in
        memory (a replaced turn's are not, as in vector_rows)."""
        wanted = sorted(set(positions))
        found: list[PositionedVector] = []
        for chunk, marks in in_batches(wanted):
            found += [PositionedVector(*row) for row in self._db.execute(
                "SELECT v.message_id, m.position, v.vector, v.context_vector"
                " FROM messages m JOIN message_vectors v ON v.message_id = m.id"
                f" WHERE m.session_id = ? AND m.position IN ({marks}) AND v.model = ?"
                f" AND m.superseded = 0{trusted_index(self._db.kind, 'v')}",
                [session_id, *chunk, model])]
        return found

    def vector_counts(self, session_id: int, model: str, last_position: int) -> dict[int, int]:
        """How many of the session's messages up to `last_position` have a vector for
        `model`, by the vectors' dimensions (one read: whether any is stored, and how
        many a query of some size can rank, are both asked of it every build)."""
        return {int(dimensions): int(found) for dimensions, found in self._db.execute(
            "SELECT v.dimensions, count(*) FROM messages m"
            " JOIN message_vectors v ON v.message_id = m.id"
            " WHERE m.session_id = ? AND m.position <= ? AND v.model = ?"
            f"{trusted_index(self._db.kind, 'v')} GROUP BY v.dimensions",
            [session_id, last_position, model])}

    def texts_without_vectors(
        self, model: str, session_id: int | None = None, *, limit: int | None = None,
        after_id: int = 0, dimensions: int = 0,
    ) -> list[PendingText]:
        """Messages (of one session, or all) with no vector for `model` yet (or one of
        another size than `dimensions`, see `_without`), oldest first; `after_id` skips
        those already checked."""
        return [PendingText(*row) for row in self._pending_rows(
            model, session_id, limit=limit, after_id=after_id, dimensions=dimensions)]

    def pending_and_last(self, model: str, session_id: int, *, limit: int,
                         after_id: int = 0, dimensions: int = 0
                         ) -> tuple[list[PendingText], int]:
        """`texts_without_vectors` of one session, and the id of its last message (0: none)
        as read before them or with them: a message committed meanwhile is past it. One
        statement past `after_id` while any is missing (a turn's two new messages); none
        missing, the last id is read first and the few messages past `after_id` again. The
        first look (no `after_id`) reads the last id first: scanning the whole session
        twice when nothing is missing would double its cost."""
        if after_id:
            rows = self._pending_rows(model, session_id, limit=limit, after_id=after_id,
                                      dimensions=dimensions, with_last=True)
            if rows:
                return [PendingText(*row[:3]) for row in rows], int(rows[0][3] or 0)
        last = self.last_message_id(session_id)
        return self.texts_without_vectors(model, session_id, limit=limit, after_id=after_id,
                                          dimensions=dimensions), last

    def _pending_rows(self, model: str, session_id: int | None, *, limit: int | None,
                      after_id: int, dimensions: int,
                      with_last: bool = False) -> list[tuple[Any, ...]]:
        without, params = _without(self._db.kind, model, dimensions)
        last = (", (SELECT id FROM messages WHERE session_id = ? ORDER BY position DESC"
                " LIMIT 1)" if with_last else "")
        sql = (
            # The message before is the one history has: a replaced turn's are skipped.
            "SELECT m.id, m.content, (SELECT p.content FROM messages p"
            "  WHERE p.session_id = m.session_id AND p.position < m.position"
            f"  AND p.superseded = 0 ORDER BY p.position DESC LIMIT 1){last}"
            f" FROM messages m WHERE {without} AND m.id > ? AND m.superseded = 0"
        )
        params = ([session_id] if with_last else []) + params
        params.append(after_id)
        if session_id is not None:
            sql += " AND +m.session_id = ?" if after_id else _IN_SESSION
            params.append(session_id)
        sql += " ORDER BY m.id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [tuple(row) for row in self._db.execute(sql, params)]

    def sessions_without_vectors(self, model: str, dimensions: int = 0) -> list[int]:
        """Ids of the sessions with messages that have no vector for `model` yet (or one
        of another size than `dimensions`)."""
        without, params = _without(self._db.kind, model, dimensions)
        return [int(session_id) for session_id, in self._db.execute(
            f"SELECT DISTINCT m.session_id FROM messages m WHERE {without}"
            " AND m.superseded = 0 ORDER BY m.session_id", params)]

    def last_message_id(self, session_id: int) -> int:
        """The id of the session's last message (0 when it has none): a look for messages
        without vectors that found fewer than it asked for checked every one up to it."""
        return int(fetch_value(self._db, "SELECT id FROM messages WHERE session_id = ?"
                               " ORDER BY position DESC LIMIT 1", [session_id]) or 0)

    def count_without_vectors(self, model: str, session_id: int | None = None, *,
                              dimensions: int = 0, after_id: int = 0) -> int:
        """How many messages (of one session, or all) `texts_without_vectors` would hand
        out; `after_id` counts only those past a message id (the ones before were checked)."""
        without, params = _without(self._db.kind, model, dimensions)
        sql = f"SELECT count(*) FROM messages m WHERE {without} AND m.superseded = 0"
        if after_id:
            sql += " AND m.id > ?"
            params.append(after_id)
        if session_id is not None:
            sql += " AND +m.session_id = ?" if after_id else _IN_SESSION
            params.append(session_id)
        return int(fetch_value(self._db, sql, params) or 0)

    def stale_vectors(self, model: str, dimensions: int,
                      session_id: int | None = None) -> dict[int, int]:
        """How many of the messages' vectors for `model` (of one session, or all) are of
        another size than `dimensions`, by their size: `texts_without_vectors` hands them
        out again."""
        sql = ("SELECT v.dimensions, count(*) FROM message_vectors v"
               " JOIN messages m ON m.id = v.message_id"
               " WHERE v.model = ? AND v.dimensions <> ? AND m.superseded = 0"
               f"{trusted_index(self._db.kind, 'v')}")
        params: list[object] = [model, dimensions]
        if session_id is not None:
            sql += " AND m.session_id = ?"
            params.append(session_id)
            held = int(fetch_value(self._db, "SELECT count(*) FROM messages"
                                   " WHERE session_id = ?", [session_id]) or 0)
            if held * 3 < int(fetch_value(self._db, "SELECT max(id) FROM messages") or 0):
                # A small share of the file: read from its messages (CROSS JOIN keeps
                # SQLite's order), not every vector of the model (35 ms an open at 20,000).
                # A large one reads faster from the vectors' side, in their key's order.
                sql = ("SELECT v.dimensions, count(*) FROM messages m"
                       " CROSS JOIN message_vectors v WHERE m.session_id = ?"
                       " AND m.superseded = 0 AND v.model = ? AND v.message_id = m.id"
                       f" AND v.dimensions <> ?{trusted_index(self._db.kind, 'v')}")
                params = [session_id, model, dimensions]
        return {int(size): int(found) for size, found in self._db.execute(
            sql + " GROUP BY v.dimensions ORDER BY v.dimensions", params)}

    def save_vectors(self, model: str, dimensions: int, rows: Iterable[VectorRow]) -> None:
        """Store vectors; a message deleted meanwhile is skipped, not an error."""
        rows = list(rows)
        with self._db.write():
            # A message's last vector, as one upsert a row after another left it: PostgreSQL
            # refuses a statement that updates one row twice.
            latest = list({r.message_id: r for r in rows}.values())
            _insert_rows(self._db,
                "INSERT INTO message_vectors"
                " (message_id, model, dimensions, vector, context_vector) ",
                "SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM messages WHERE id = ?)",
                " ON CONFLICT (model, message_id) DO UPDATE SET dimensions = excluded.dimensions,"
                " vector = excluded.vector, context_vector = excluded.context_vector",
                [(r.message_id, model, dimensions, r.vector, r.context_vector, r.message_id)
                 for r in latest])
            cached = [r for r in rows if r.digest is not None]
            # Only a vector of the role's own session is found again (cached_vectors): an
            # entry pointing into another's session, written before that rule, would keep
            # the text's entry (one per role) from pointing here.
            own = f"SELECT 1 FROM messages WHERE id = {{}} AND {self._db.own_rows}"
            rows_of_cache = [(model, r.digest, r.message_id, 0, r.message_id) for r in cached]
            if self._db.kind == "sqlite":
                # Every session is the file's own: an entry is stale only when its message
                # is gone (deleted by a tool with foreign keys off). Repointed in the insert
                # itself, not deleted by a statement of its own (one of a turn's ~40).
                _insert_rows(self._db,
                             "INSERT INTO vector_cache (model, digest, message_id, context) ",
                             f"SELECT ?, ?, ?, ? WHERE EXISTS ({own.format('?')})",
                             " ON CONFLICT (model, digest) DO UPDATE SET"
                             " message_id = excluded.message_id, context = excluded.context"
                             f" WHERE NOT EXISTS ({own.format('vector_cache.message_id')})",
                             rows_of_cache)
                return
            # One statement for the batch's digests (a turn's two), not one a digest.
            digests = list(dict.fromkeys(r.digest for r in cached))
            for start in range(0, len(digests), CACHE_LOOKUP):
                chunk = digests[start : start + CACHE_LOOKUP]
                self._db.execute(
                    f"DELETE FROM vector_cache WHERE model = ? AND digest IN"
                    f" ({', '.join('?' * len(chunk))})"
                    f" AND NOT EXISTS ({own.format('vector_cache.message_id')})",
                    [model, *chunk])
            _insert_rows(self._db,
                         "INSERT INTO vector_cache (model, digest, message_id, context) ",
                         f"SELECT ?, ?, ?, ? WHERE EXISTS ({own.format('?')})",
                         " ON CONFLICT DO NOTHING", rows_of_cache)

    def cached_vectors(self, model: str, digests: Iterable[str],
                       dimensions: int = 0) -> dict[str, bytes]:
        """Stored vectors of `model` by the sha256 of the text they embed (a message's own
        text, or its context text), for the digests found: a text embedded once, in any
        session of the role's own, is not embedded again. The vectors are read from
        `message_vectors`, so what erases a message's vectors erases them here too.

        On PostgreSQL only vectors of sessions the role owns are reused: a vector in a
        session another owns (one it shares with the role, even one the role wrote into) is
        that owner's to change, and reused it would stand for the role's own text in its
        private sessions. With `dimensions`, a vector of another size is not found (see
        `_without`)."""
        wanted = list(dict.fromkeys(digests))
        sized = [dimensions] if dimensions else []
        found: dict[str, bytes] = {}
        # Nor one another role wrote into the role's own session (p027).
        trusted = (f" AND {trusted_entry('message_vectors')}"
                   if self._db.kind == "postgresql" else "")
        own_vectors = ("SELECT model, message_id, dimensions, vector, context_vector"
                       f" FROM message_vectors WHERE {self._db.own_rows}{trusted}")
        for start in range(0, len(wanted), CACHE_LOOKUP):
            chunk = wanted[start : start + CACHE_LOOKUP]
            found.update((str(digest), bytes(vector)) for digest, vector in self._db.execute(
                "SELECT c.digest, CASE c.context WHEN 1 THEN v.context_vector ELSE v.vector END"
                f" FROM vector_cache c JOIN ({own_vectors}) v"
                " ON v.model = c.model AND v.message_id = c.message_id"
                f" WHERE c.model = ? AND c.digest IN ({', '.join('?' * len(chunk))})"
                + (" AND v.dimensions = ?" if sized else ""),
                [model, *chunk, *sized]))
        return found


ROWS_A_STATEMENT = 100
"""Rows `_insert_rows` joins into one statement (SQLite allows 500 arms of a compound)."""


def _insert_rows(db: Backend, insert: str, select: str, conflict: str,
                 rows: Sequence[Sequence[object]]) -> None:
    """`insert` of each row `select` gives (one SELECT of its own each, as a row's own
    condition holds), ROWS_A_STATEMENT rows a statement (a turn's two: one, not two)."""
    for start in range(0, len(rows), ROWS_A_STATEMENT):
        chunk = rows[start : start + ROWS_A_STATEMENT]
        db.execute(insert + " UNION ALL ".join([select] * len(chunk)) + conflict,
                   [value for row in chunk for value in row])
