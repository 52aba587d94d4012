"""A history file on disk: creating it private, opening it (plain or SQLCipher), checking
its key, folding its write-ahead log, and telling when another file has taken its path."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from chatmem.errors import HistoryLocked, StoreError, StoreFailure
from chatmem.store.result_codes import BUSY, primary_code
from chatmem.store.sqlite_names import sqlite_name

BUSY_TIMEOUT_MS = 5000
"""How long a statement waits for another process's lock before SQLite says it is busy."""


def special_file(path: Path) -> str | None:
    """What `path` (or the file its link names) is when it is there but no regular file: "a
    directory", "a FIFO (named pipe)", a device, a socket; None otherwise."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None  # missing (created next), or opening it says why
    if stat.S_ISREG(mode):
        return None
    kinds = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket")]
    return next((kind for test, kind in kinds if test(mode)), "a special file")


def other_names(path: Path) -> int:
    """How many names (hard links) the file at `path` has besides `path`: SQLite keeps its
    write-ahead log and shared index beside the name it was given (a symbolic link it
    follows), so two processes opening one file by two names each read the other's commits
    from a log it never sees, and the last to fold its own log erases the other's turns."""
    try:
        return max(path.stat().st_nlink - 1, 0)
    except OSError:
        return 0


def shell_word(path: Path) -> str:
    """`path` as one word of a suggested shell command: quoted where a shell would split or
    expand it, and not taken for an option (`sqlite3 -h.db …` is sqlite3's unknown option)."""
    import shlex

    text = str(path)
    return shlex.quote(f"./{text}" if text.startswith("-") else text)


def filesystem_top(path: Path) -> Path:
    """The highest folder above `path` on its filesystem (its mount point): where `find
    -xdev` must start to meet every hard link of it. From /, a history under a /home of its
    own was never reached, and the command listed no name at all."""
    try:
        here = path.resolve()
        device = here.stat().st_dev
        while here.parent != here and here.parent.stat().st_dev == device:
            here = here.parent
    except OSError:
        return Path("/")
    return here if here.is_dir() else here.parent  # a file bind-mounted on its own


def create_private_file(path: Path) -> None:
    """Create `path` readable by its owner only (0600), unless it exists.

    SQLite gives the -wal and -shm files the mode of the database file.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError as e:
        raise StoreError(f"{path}: cannot create it: {e.strerror}") from None


def fold_wal(path: Path) -> None:
    """Fold a plain file's write-ahead log into the file, so that the file alone is whole,
    holding it alone: StoreError (BUSY) when another process has it open, which would go on
    writing to it (a move would lose what it writes).

    An encrypted file cannot be read without its key and is left as it is.
    """
    try:
        connection = sqlite3.connect(sqlite_name(path), timeout=0)
        try:
            connection.execute("PRAGMA locking_mode = EXCLUSIVE")
            try:
                connection.execute("BEGIN EXCLUSIVE")
            except sqlite3.OperationalError as e:
                if primary_code(e) in BUSY:
                    raise StoreError(f"{path} is open in another chatmem process",
                                     kind=StoreFailure.BUSY, location=str(path),
                                     reason="open in another chatmem process") from None
                raise
            connection.execute("COMMIT")
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
    except sqlite3.DatabaseError:
        pass
    except sqlite3.Error as e:
        raise StoreError(f"{path}: {e}", kind=StoreFailure.CANNOT_OPEN, location=str(path),
                         reason=str(e)) from None


def checkpointed_hash(path: Path) -> str:
    """What a history file holds, as one SHA-256: the file with its write-ahead log folded
    in (and the log's own bytes, when one is left). chatmem.testing's check that a build
    writes nothing compares it before and after."""
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()
    digest = hashlib.sha256(path.read_bytes())
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        digest.update(wal.read_bytes())
    return digest.hexdigest()


def connect(path: str | Path, key: str | None = None, *,
            timeout_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """The raw SQLite connection to a history file (the one place a file is opened).

    With a key it is a SQLCipher connection (chatmem.store.cipher), the key
    already checked, that behaves and fails exactly as a sqlite3 one.
    """
    if key is None:
        return sqlite3.connect(sqlite_name(path), timeout=timeout_ms / 1000)
    from chatmem.store import cipher

    conn: Any = cipher.open_encrypted(Path(path), key, timeout_ms / 1000)
    return cast(sqlite3.Connection, conn)


def check_key(path: Path, key: str | None) -> str | None:
    """The key to open `path` with (None: plaintext), or an error before anything is written.

    An encrypted file needs the key; a plaintext one refuses a key rather than
    be used unencrypted by someone who believes it is not. A new file is
    created encrypted when a key is given.
    """
    from chatmem.store import cipher

    kind = cipher.file_kind(path)
    if kind == "encrypted" and key is None:
        if not cipher.available():
            raise HistoryLocked(f"{path} is encrypted: install SQLCipher support "
                                f"({cipher.INSTALL_HINT}) and {cipher.KEY_HINT}", missing=True)
        raise HistoryLocked(f"{path} is encrypted: {cipher.KEY_HINT}", missing=True)
    if key is None or kind == "other":
        return None  # "other" is refused by SQLite as "not a database"
    if kind == "plain":
        raise StoreError(f"{path} is not encrypted, but a key is set: `chatmem encrypt` "
                         "encrypts it with that key (or unset CHATMEM_KEY and key_command)")
    cipher.driver()  # the extra must be there before a new file is created
    return key


def key_command_needed(path: Path) -> bool:
    """Whether opening `path` uses a key_command's key: an encrypted file, or none yet
    (created encrypted under it). A plain file refuses any key, and one that is no
    database is refused by SQLite: key_command is not run for them (it may ask a person,
    or a password manager, for nothing)."""
    from chatmem.store import cipher

    return cipher.file_kind(path) in ("encrypted", "missing")


def file_identity(path: Path) -> tuple[int, int] | None:
    """Which file is at `path` (device and inode), None when there is none."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


def log_identity(path: Path) -> tuple[int, int, int, int] | None:
    """Which write-ahead log is beside `path` and how it was last left (device, inode, size,
    change time), None when there is none."""
    try:
        # os.stat of the name, not a Path made of it (2 against 6 us): after every commit.
        found = os.stat(f"{path}-wal")
    except OSError:
        return None
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


def let_go(conn: sqlite3.Connection, path: Path, log: tuple[int, int, int, int] | None) -> None:
    """Close a connection whose file left `path` (deleted, or replaced: a restore).

    Its write-ahead log is still beside the path, and whoever opens the file there now
    would read this file's pages from it as that file's (a restored backup would get turns
    it does not hold, or fail its integrity check). Unless another connection wrote to the
    log since this one last left it as `log` (log_identity), it holds only this file's
    pages: folding them into this file and emptying it (without waiting: never under a
    reader of it) leaves the file at the path as it is. SQLite would not, closing a file
    that moved.
    """
    try:
        if log_identity(path) == log:
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error:
        pass  # in use: left as it is, as SQLite would leave it
    finally:
        conn.close()


def restart_log(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """Start a log folded whole over now, with a write that changes nothing (user_version
    set to itself). SQLite starts it over at the next commit, which first syncs the log's
    new header: the turn after each fold waited for that fsync (5-20 ms on an ordinary
    disk, one turn in FOLD_EVERY: the turns' p95). Same sync, same durability, made
    between turns. Never waits for another process's write (which starts it over itself).
    """
    if conn.in_transaction:
        return
    try:
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
                conn.execute(f"PRAGMA user_version = {version}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        finally:
            conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
    except sqlite3.Error:
        pass  # busy or refused: the next write starts the log over, as before


ROOM_BYTES = 1 << 20
"""Free space a history file needs before a turn is sent once its disk was found full."""

_found_full: set[tuple[int, int]] = set()
"""By (device, inode): the files a write of this process found their disk full, until a check
found room. Kept for the process, not the connection: a server closes a conversation whose
request failed and opens it anew for the next, which then sent every request to the model
(paid) only to find the disk still full."""
_found_full_lock = threading.Lock()


def found_full(identity: tuple[int, int] | None) -> None:
    """Remember that a write to the file `identity` (file_identity) found the disk full."""
    if identity is not None:
        with _found_full_lock:
            _found_full.add(identity)


def was_found_full(identity: tuple[int, int] | None) -> bool:
    return identity is not None and identity in _found_full


def room_found(identity: tuple[int, int] | None) -> None:
    """Forget that the file's disk was full: check_room found room."""
    if identity is not None:
        with _found_full_lock:
            _found_full.discard(identity)


def check_room(conn: sqlite3.Connection, path: Path) -> None:
    """Raise unless a file whose disk was found full can take a turn again: its folder's disk
    has ROOM_BYTES free and the file is not at its page limit (PRAGMA max_page_count). A
    turn is not sent, and its model not paid for, only to find the disk still full."""
    try:
        free = shutil.disk_usage(path.parent).free
        pages, limit, size = (conn.execute(f"PRAGMA {name}").fetchone()[0]
                              for name in ("page_count", "max_page_count", "page_size"))
    except (OSError, sqlite3.Error):
        return  # cannot tell: the write itself will say
    if free < ROOM_BYTES or (limit - pages) * size < ROOM_BYTES:
        raise StoreError(f"{path}: the disk is still full (free some space and try again)",
                         kind=StoreFailure.DISK, location=str(path))


def wait_for(statement: Callable[[], object]) -> None:
    """Run `statement`, retrying while another process holds the file.

    Changing the journal mode can report "locked" at once instead of
    waiting for the busy timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            statement()
            return
        except sqlite3.OperationalError as e:
            if primary_code(e) not in BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def return_freed_memory() -> None:
    """Give the system back the memory just let go: glibc keeps it in the arena of the thread
    that freed it, for that thread alone (a server's kept conversations each have one), so
    RSS stayed as high. Elsewhere (macOS, musl) nothing is done."""
    global _LIBC
    if _LIBC is None:
        import ctypes

        # The process's own symbols hold its C library's: no search for the file (which
        # ctypes.util does by reading the loader's cache, a thousand calls).
        try:
            _LIBC = ctypes.CDLL(None) if sys.platform.startswith("linux") else False
        except OSError:
            _LIBC = False
    trim = getattr(_LIBC, "malloc_trim", None) if _LIBC else None
    if trim is not None:
        trim(0)


_LIBC: Any = None
"""The C library, once looked up (False: none to return memory with)."""
