"""The one object the store's SQL goes through: a database, whichever it is.

`Store` speaks portable SQL (`?` placeholders, RETURNING, ON CONFLICT) to a
`Backend`; the statements that differ between SQLite and PostgreSQL (the
full-text index, the write lock, the log, the catalogue) are its dialect
methods. SQLite is `sqlite_backend.SqliteBackend`, PostgreSQL
`postgres_backend.PostgresBackend`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from chatmem.store.records import SessionAccess
from chatmem.store.word_terms import SessionWords, WeightedTerm


class Cursor(Protocol):
    # Read-only properties: a protocol's plain attributes would have to be settable.
    @property
    def description(self) -> Any: ...

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Sequence[Any] | None: ...

    def fetchall(self) -> list[Sequence[Any]]: ...

    def __iter__(self) -> Iterator[Sequence[Any]]: ...


class Statements(Protocol):
    """What runs SQL: a backend, or (in a migration) SQLite's own connection."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Any: ...


class Backend(Protocol):
    kind: str
    """"sqlite" or "postgresql"."""
    location: str
    """What messages name: the file's path, or the URL with its password masked."""
    encrypted: bool
    ranks_vectors: bool
    """Whether nearest_vectors finds candidates (pgvector here), or recall ranks in numpy."""
    own_rows_first: str
    """An ORDER BY prefix that puts the connecting user's own rows before rows shared with
    them ("" where every row is the user's own)."""
    own_rows: str
    """A condition true of the connecting user's own rows, not of rows shared with them
    ("1 = 1" where every row is the user's own)."""
    shared_by: str
    """The owner of a row shared with the connecting user, NULL for their own (an SQL
    expression: "NULL" where every row is the user's own)."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement. The driver's errors never leave a backend: each is a
        StoreError of its kind (chatmem.errors.StoreFailure), a broken constraint a
        StoreConflict that the store catches where a conflict is expected."""
        ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    @property
    def in_transaction(self) -> bool: ...

    def write(self, *, patient: bool = False,
              replied: bool = True) -> AbstractContextManager[None]:
        """One all-or-nothing write transaction, exclusive among writers; nested use joins
        the outer one. Errors become StoreError (busy, read-only, disk, dropped connection).
        `patient`: a turn's write (its paid reply, its new session) waits for another
        process's write up to WRITE_WAIT_S, not the busy timeout, telling the listener once
        that it waits (WaitingForWrite; `replied`: a reply waits to be stored, else the
        input waits to be sent); given up then, a BUSY StoreError naming that wait."""
        ...

    def check_writable(self, *, patient: bool = False) -> None:
        """`patient`: waits for another process's write as a patient write does."""
        ...

    def moved(self) -> bool:
        """Whether what this connection opened is no longer where it was opened (a file
        deleted or renamed over; never a server's database)."""
        ...

    @property
    def identity(self) -> tuple[int, int] | None:
        """Which file this connection reads, the same for every connection of this process
        that opened it (its device and inode): what they read of it they may share. None
        when nothing names it so: a file in memory, one that left its path, a server's
        database (what a role reads there depends on the role)."""
        ...

    def close(self) -> None: ...

    # -- the dialect: every statement that differs between SQLite and PostgreSQL --------

    def index_words(self, entries: Sequence[tuple[int, str]]) -> None:
        """Add or replace messages' full-text entries: (message id, fts.index_text(content)),
        in one statement where the dialect can (PostgreSQL's word statistics row is then
        updated once per batch, not once per message)."""
        ...

    def unindex_words(self, message_ids: Sequence[int]) -> None:
        """Drop these messages' full-text entries. No chatmem path calls it (messages are
        never deleted one by one; `unindex_session_words` goes with a session): it is
        index_words' inverse in each dialect, which the tests of the index's migrations
        put earlier entries back with, kept here as SQLite's drops the word counts it
        holds in memory with them (a delete behind the backend's back would leave them)."""
        ...

    def unindex_session_words(self, session_ids: Sequence[int]) -> None:
        """Drop the full-text entries of every message of these sessions (before the
        sessions are deleted): in one statement per batch of sessions, in message order."""
        ...

    def forget_erased_words(self) -> None:
        """Make erased terms unrecoverable from the index."""
        ...

    def count_words_matches(self, terms: Sequence[str], most: int) -> list[int]:
        """Per term, how many entries of the full-text index match it, counted up to
        `most` + 1 (a count above `most` means "too many"): all in one statement."""
        ...

    def count_words_and_entries(self, terms: Sequence[str],
                                most: int) -> tuple[list[int], int]:
        """`count_words_matches`, with the index's entries as an IDF takes them: the highest
        message id, read in the same statement (recall weighs what it searched by it)."""
        ...

    def session_word_counts(self, terms: Sequence[str], session_id: int,
                            most: int) -> SessionWords | None:
        """Per term, how many of the conversation's index entries match it, counted up
        to `most` + 1, each count reading at most that many however often other
        conversations say it; None when the conversation holds the whole index (the
        index's counts are its own)."""
        ...

    def session_word_scores(self, terms: Sequence[WeightedTerm], session_id: int,
                            before_turn: int, limit: int) -> list[tuple[int, float]]:
        """(position, score) of the conversation's best `limit` messages before
        `before_turn` saying any of `terms` (a replaced turn's left out), best first:
        each term's score summed, rounded to 9 decimals, so both backends give the same
        values. Reads the terms' entries in the conversation, and every entry of a term
        with an `index_count` (BM25 reads them for its IDF)."""
        ...

    def word_scores(self, terms: Sequence[str], session_id: int | None,
                    before_turn: int | None, limit: int) -> list[tuple[int, int, float]]:
        """(message id, position, score; higher is better) of the best `limit` messages
        matching any of `terms`, in one session (None: all), before `before_turn`
        (None: all)."""
        ...

    def newest_word_matches(self, terms: Sequence[str], limit: int,
                            session_id: int | None = None) -> list[int]:
        """Ids of the newest `limit` messages matching any of `terms` (in one session;
        None: all), newest first, read from the newest end of the index: words too common
        to score (each ranking would read every entry they have) still find where they
        were said last."""
        ...

    def nearest_vectors(self, model: str, dimensions: int, session_id: int,
                        last_position: int, query: Sequence[float],
                        limit: int) -> list[int] | None:
        """Positions (up to `last_position`) of the session's messages among the `limit`
        nearest to `query` by their own vector or by their context vector (cosine), found
        by an index; None when the database has none (recall ranks in numpy)."""
        ...

    def fold_log(self, *, wait: bool = True) -> None:
        """Fold the write-ahead log into the database (SQLite); nothing elsewhere.
        Without `wait`, fold what no reader or writer holds, and leave the log's file as
        it is: the cheap fold for between turns."""
        ...

    def let_go_of_read_pages(self) -> None:
        """After a read of many rows that are kept elsewhere (a session's vectors, in
        recall's arrays): SQLite lets go of its page cache and the process gives the freed
        memory back; nothing elsewhere."""
        ...

    def merge_word_segments(self, pages: int) -> None:
        """Merge up to `pages` pages of the word index's segments (SQLite's FTS5 writes one
        per commit and merges them inside some later commit); nothing elsewhere. For
        between turns, so no turn's commit has to. Skipped, not waited for, while another
        process holds the write lock or the file is read-only: a later commit merges."""
        ...

    def has_column(self, table: str, column: str) -> bool: ...

    def session_access(self, session_id: int) -> SessionAccess | None:
        """What the connecting role may do with the session (None: it cannot see it)."""
        ...
