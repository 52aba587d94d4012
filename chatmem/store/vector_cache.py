"""A file of vectors kept between runs that use no history file (evals of transcripts).

An eval replays each transcript on a scratch store, so the history file's
`vector_cache` cannot help it: this file, in the user's cache directory, keeps
every vector an eval or a replay embedded, by (model, stored or query, sha256
of the text). It is the user's alone (0600), bounded (the oldest entries go
first once it holds `most`), and shared safely by the worker processes of
`eval --jobs N`: WAL, and each write one BEGIN IMMEDIATE transaction that
waits for the others.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from pathlib import Path

from chatmem.errors import StoreError, StoreFailure
from chatmem.store.sqlite_failures import failure_of

MOST = 200_000
"""Entries the file keeps (about 150 MB of 384-dimension vectors at the most)."""
LOOKUP = 400
"""Digests looked up per statement."""
WAIT_S = 60.0
"""How long a write waits for another process's: a pool of workers may queue up."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    id INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    query INTEGER NOT NULL,
    digest TEXT NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (model, query, digest)
)
"""


class VectorCacheFile:
    """The cache file at `path`, created 0600 when missing (see the module's text).

    Each lookup or write opens the file for its own time (well under a
    millisecond, against an embedding's tens): nothing to close, and any thread
    of a replay may use it.
    """

    def __init__(self, path: Path, most: int = MOST) -> None:
        self.path, self.most = path, most
        with self._opened():
            pass

    def _create(self) -> None:
        """The file, 0600, when missing. Created when missing only: closing a descriptor of
        a file SQLite holds open in this process would free its locks
        (store/open_files.py)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with suppress(FileExistsError):
                os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
            os.chmod(self.path, 0o600)
        except OSError as e:
            raise self._error(e) from None

    @contextmanager
    def _opened(self) -> Iterator[sqlite3.Connection]:
        # An erasure in any chatmem process deletes the file (config.paths.drop_vector_cache),
        # also while an eval runs here: each opening makes it again, 0600 and with its
        # table, where SQLite would have made an empty file the umask's way.
        self._create()
        try:
            with closing(sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=rw", uri=True,
                                         timeout=WAIT_S, isolation_level=None)) as conn:
                _prepare(conn)
                yield conn
        except sqlite3.Error as e:
            raise self._error(e) from None

    def _error(self, error: Exception) -> StoreError:
        # Where it cannot be made or written (a full disk, a read-only home): CANNOT_OPEN,
        # DISK, READ_ONLY; a file there that is no cache: DAMAGED.
        kind = (failure_of(error) if isinstance(error, sqlite3.Error)
                else StoreFailure.CANNOT_OPEN)
        return StoreError(f"{self.path}: the vector cache cannot be used ({error}); "
                          "delete the file to start a new one", kind=kind, reason=str(error))

    def cached(self, model: str, query: bool, digests: Sequence[str]) -> dict[str, bytes]:
        """The kept vectors of the digests found."""
        wanted = list(dict.fromkeys(digests))
        found: dict[str, bytes] = {}
        with self._opened() as conn:
            for start in range(0, len(wanted), LOOKUP):
                chunk = wanted[start : start + LOOKUP]
                found.update(conn.execute(
                    "SELECT digest, vector FROM vectors WHERE model = ? AND query = ?"
                    f" AND digest IN ({', '.join('?' * len(chunk))})",
                    [model, int(query), *chunk]).fetchall())
        return found

    def keep(self, model: str, query: bool, vectors: Sequence[tuple[str, bytes]]) -> None:
        """Keep `vectors` (digest, bytes); past `most` entries, the oldest go."""
        if not vectors:
            return
        with self._opened() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT INTO vectors (model, query, digest, vector) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT DO NOTHING",
                    [(model, int(query), digest, blob) for digest, blob in vectors])
                # Ids only grow, so the oldest are those below the newest minus `most`:
                # one seek of the primary key, not a count of the file.
                conn.execute("DELETE FROM vectors WHERE id <= (SELECT max(id) FROM vectors) - ?",
                             [self.most])
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def count(self) -> int:
        with self._opened() as conn:
            return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])


def _prepare(conn: sqlite3.Connection) -> None:
    """WAL mode and the table, waiting out another process making them. Two processes
    opening a new cache at once (an eval's two jobs) got "database is locked" at once about
    one open in ten: SQLite does not wait for these, the busy timeout notwithstanding."""
    deadline = time.monotonic() + WAIT_S
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(SCHEMA)
            return
        except sqlite3.OperationalError as e:
            if e.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

