"""Encryption at rest: SQLCipher through the optional `sqlcipher3` wheel (chatmem[encrypt]).

An encrypted history file is a SQLCipher 4 database: every page, the WAL's
included, is AES-256 encrypted and authenticated, so the file, its -wal and
its -shm hold no plaintext. The key is a passphrase (SQLCipher derives the
page key with PBKDF2-SHA512, 256,000 rounds, about 0.1 s per open) or a raw
256-bit key written `x'<64 hex digits>'`, which skips the derivation.

The key is handed to SQLCipher and kept nowhere else: it is never stored,
logged, shown or put in an error message, and SQLCipher's own error log (which
would print "hmac check failed" lines on stderr) is switched off before the
key is given.

Converting a file (encrypt, decrypt, a new key) never edits it in place: its
content is exported with `sqlcipher_export` into a new file beside it (0600, under
a name no one can guess), the new file is checked (integrity and every table's row
count), and only then renamed over the old one, while an exclusive lock keeps every
other process out.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import tempfile
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from types import ModuleType
from typing import Any

from chatmem import install_hint
from chatmem.errors import HistoryLocked, StoreError, StoreFailure
from chatmem.store import open_files
from chatmem.store.open_files import FileKind
from chatmem.store.result_codes import BUSY, primary_code
from chatmem.store.sqlite_names import sqlite_name

SQLITE_MAGIC = b"SQLite format 3\x00"
INSTALL_HINT = install_hint("encrypt")
KEY_HINT = "set CHATMEM_KEY, or key_command in the config"
_RAW_KEY = re.compile(r"x'[0-9A-Fa-f]{64}'")


def file_kind(path: Path) -> FileKind:
    """What the first bytes say: no file yet, plain SQLite, SQLCipher, or something else.

    A SQLCipher file starts with a random 16-byte salt and is whole pages long;
    a text file or a truncated database is "other".
    """
    held = open_files.held_kind(path)
    if held is not None:
        return held  # what it said then: reading it now would free the process's locks
    try:
        found = path.stat()
        if not stat.S_ISREG(found.st_mode):
            return "other"  # not read: a FIFO's open waits for a writer; the store names it
        size = found.st_size
        with path.open("rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "other"  # SQLite reports what is wrong when it opens it
    if size == 0:
        return "missing"
    if head == SQLITE_MAGIC:
        return "plain"
    printable = sum(32 <= b < 127 or b in (9, 10, 13) for b in head)
    if size % 512 == 0 and printable < len(head):
        return "encrypted"
    return "other"


def available() -> bool:
    try:
        driver()
    except StoreError:
        return False
    return True


_driver: ModuleType | None = None


def driver() -> ModuleType:
    """The sqlcipher3 DB-API module, or a StoreError saying how to install it."""
    global _driver
    if _driver is None:
        try:
            from sqlcipher3 import dbapi2
        except ImportError:
            raise StoreError(f"encrypted history files need SQLCipher: {INSTALL_HINT}") from None
        _driver = dbapi2
    return _driver


def key_pragma(key: str, schema: str = "") -> str:
    """`PRAGMA key = '…'` (a passphrase, quoted) or `= "x'…'"` (a raw 256-bit key)."""
    if not key:
        raise StoreError("an empty key cannot encrypt anything")
    target = f"{schema}." if schema else ""
    if _RAW_KEY.fullmatch(key):
        return f"PRAGMA {target}key = \"{key}\""
    quoted = key.replace("'", "''")
    return f"PRAGMA {target}key = '{quoted}'"


def _attach_key(key: str | None) -> str:
    if key is None:
        return "''"  # SQLCipher's way of attaching a plaintext database
    if _RAW_KEY.fullmatch(key):
        return f'"{key}"'
    return "'" + key.replace("'", "''") + "'"


def open_encrypted(path: Path, key: str, timeout: float) -> CipherConnection:
    """An open SQLCipher connection, the key checked; HistoryLocked when it is wrong."""
    dbapi2 = driver()
    raw = dbapi2.connect(sqlite_name(path), timeout=timeout)
    try:
        raw.execute("PRAGMA cipher_log_level = NONE")
        raw.execute(key_pragma(key))
        # The key is only tried on the first read.
        raw.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except dbapi2.DatabaseError as e:
        raw.close()
        if primary_code(e) == sqlite3.SQLITE_NOTADB:
            raise HistoryLocked(f"{path}: wrong key: SQLCipher cannot decrypt it with the "
                                "key given", missing=False) from None
        raise translate(e) from None
    return CipherConnection(raw)


# -- a sqlcipher3 connection that raises sqlite3's exceptions ---------------------------


def translate(error: Exception) -> sqlite3.Error:
    """The same error as sqlite3's class of the same name, so one `except` fits both."""
    kind = getattr(sqlite3, type(error).__name__, sqlite3.Error)
    if not (isinstance(kind, type) and issubclass(kind, sqlite3.Error)):
        kind = sqlite3.Error
    translated = kind(*error.args)
    for attribute in ("sqlite_errorcode", "sqlite_errorname"):
        if hasattr(error, attribute):
            setattr(translated, attribute, getattr(error, attribute))
    return translated


class _Translating:
    """Calls through to a sqlcipher3 object; its exceptions come out as sqlite3's."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Any) -> None:
        object.__setattr__(self, "_inner", inner)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = value(*args, **kwargs)
            except driver().Error as e:
                raise translate(e) from None
            return _wrap(result)

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)


def _wrap(result: Any) -> Any:
    dbapi2 = driver()
    if isinstance(result, dbapi2.Cursor):
        return CipherCursor(result)
    if isinstance(result, dbapi2.Connection):
        return CipherConnection(result)
    return result


class CipherCursor(_Translating):
    def __iter__(self) -> Iterator[Any]:
        rows = iter(self._inner)
        while True:
            try:
                row = next(rows)
            except StopIteration:
                return
            except driver().Error as e:
                raise translate(e) from None
            yield row


class CipherConnection(_Translating):
    """sqlite-utils and the store use it exactly as a sqlite3.Connection."""

    def __enter__(self) -> CipherConnection:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if kind is None:
                self._inner.commit()
            else:
                self._inner.rollback()
        except driver().Error as e:
            raise translate(e) from None


# -- converting a file: encrypt, decrypt, rekey ---------------------------------------------


def convert(path: Path, old_key: str | None, new_key: str | None) -> Path:
    """Rewrite the history file at `path` under `new_key` (None: plaintext); returns `path`.

    The old file is read under an exclusive lock (no other process may have it
    open), exported into a new file beside it, which is verified and then
    renamed over it in one step. On any failure the new file is removed and the
    old one is left byte for byte as it was. A symbolic link at `path` is refused
    (UsageError): the rename would replace the link and leave the file it points at,
    plaintext perhaps, where it was.
    """
    from chatmem.privacy.files import refuse_foreign

    dbapi2 = driver()
    refuse_foreign(path)
    source = dbapi2.connect(sqlite_name(path), timeout=0, isolation_level=None)
    temp: Path | None = None
    try:
        source.execute("PRAGMA cipher_log_level = NONE")
        if old_key is not None:
            source.execute(key_pragma(old_key))
        _lock(source, path)
        counts = _row_counts(source)
        temp = _new_copy(path)
        source.execute(f"ATTACH DATABASE ? AS converted KEY {_attach_key(new_key)}",
                       [sqlite_name(temp)])
        source.execute("PRAGMA converted.journal_mode = MEMORY")  # no -journal beside it
        source.execute("SELECT sqlcipher_export('converted')")
        source.execute("DETACH DATABASE converted")
        _verify(temp, new_key, counts)
        # Only now, the copy good: the WAL is folded into the file and left, so that
        # closing this connection after the rename cannot touch a -wal file of the new
        # one. Done earlier, a failure left the original's header rewritten.
        source.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        source.execute("PRAGMA journal_mode = MEMORY")
        refuse_foreign(path)  # again: one may have been planted meanwhile
        os.replace(temp, path)
        _sync_folder(path.parent)
    except dbapi2.DatabaseError as e:
        raise StoreError(f"{path}: not converted, the file is unchanged: {e}") from None
    except OSError as e:
        # No folder to write the copy in, no room: one line, not a traceback.
        raise StoreError(f"{path}: not converted, the file is unchanged: "
                         f"{e.strerror or e}") from None
    finally:
        source.close()
        if temp is not None:
            with suppress(FileNotFoundError):
                temp.unlink()
    return path


def _new_copy(path: Path) -> Path:
    """A new empty file beside `path` for its converted copy: 0600, created by this process
    under a name no one can guess (mkstemp: O_CREAT|O_EXCL|O_NOFOLLOW), so a file or link
    another user planted at a name chatmem would use is never opened, written or removed.
    The name starts as `conversion_file`'s, for `remove_abandoned_conversions`."""
    fd, name = tempfile.mkstemp(prefix=f"{conversion_file(path, os.getpid()).name}-",
                                dir=path.parent)
    os.close(fd)
    return Path(name)


def conversion_file(path: Path, pid: int) -> Path:
    """What the converted copy process `pid` writes beside `path` is named after: this, then
    a random part (SQLite may add -journal)."""
    return path.with_name(f"{_CONVERTING.format(name=path.name)}{pid}")


_CONVERTING = ".{name}.converting-"


def remove_abandoned_conversions(path: Path) -> list[Path]:
    """Delete the converted copies beside `path` whose process is gone; returns them.

    A conversion killed with SIGKILL cannot clean up after itself, and its copy
    is the whole history, readable with the key it was written under. A live
    conversion's copy is left alone (its process id is in the name).
    """
    prefix = _CONVERTING.format(name=path.name)
    removed = []
    try:
        candidates = list(path.parent.iterdir())
    except OSError:
        return []
    for candidate in candidates:
        if not candidate.name.startswith(prefix):
            continue
        pid = candidate.name[len(prefix):].split("-", 1)[0]
        if not pid.isdigit() or _running(int(pid)):
            continue
        with suppress(OSError):  # gone meanwhile, or a read-only folder: not this command's
            candidate.unlink()
            removed.append(candidate)
    return removed


def _running(pid: int) -> bool:
    """Whether process `pid` is alive (a zombie, killed but not yet reaped, is not)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def _lock(source: Any, path: Path) -> None:
    """Hold the file exclusively until `source` closes; refuse if anyone else has it open."""
    source.execute("PRAGMA locking_mode = EXCLUSIVE")
    try:
        source.execute("BEGIN EXCLUSIVE")
    except driver().DatabaseError as e:
        if primary_code(e) == sqlite3.SQLITE_NOTADB:
            raise HistoryLocked(f"{path}: wrong key: SQLCipher cannot decrypt it with the "
                                "key given", missing=False) from None
        if primary_code(e) in BUSY:
            raise StoreError(f"{path} is open in another chatmem process; close it and "
                             "try again (nothing was changed)", kind=StoreFailure.BUSY,
                             location=str(path)) from None
        raise
    source.execute("COMMIT")


def _row_counts(conn: Any) -> dict[str, int]:
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'")]
    return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def _verify(temp: Path, key: str | None, counts: dict[str, int]) -> None:
    dbapi2 = driver()
    check = dbapi2.connect(sqlite_name(temp))
    try:
        check.execute("PRAGMA cipher_log_level = NONE")
        if key is not None:
            check.execute(key_pragma(key))
        result = check.execute("PRAGMA integrity_check").fetchone()[0]
        if result != "ok":
            raise StoreError(f"the converted copy failed its integrity check ({result})")
        if _row_counts(check) != counts:
            raise StoreError("the converted copy does not hold every row")
    finally:
        check.close()
    with temp.open("rb+") as f:
        os.fsync(f.fileno())


def _sync_folder(folder: Path) -> None:
    """Make the rename durable (POSIX: fsync the directory)."""
    with suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
