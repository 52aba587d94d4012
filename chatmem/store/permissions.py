"""Which permission stops SQLite from opening or writing a history file, in words.

SQLite says only "unable to open database file" or "attempt to write a readonly
database"; the operating system knows which permission is missing, on the file or on
the folder SQLite writes its -wal, -shm and -journal files in.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def missing_permission(path: Path, *, write: bool) -> str | None:
    """`you lack read permission on FILE (mode -w-------)`, or None when none is missing.

    `write`: the file is being written (a turn), not only read; SQLite also writes beside
    the file whenever it opens one in WAL mode, so the folder must be writable then too.
    """
    folder = path.parent if str(path.parent) else Path(".")
    if (write or not path.exists()) and _read_only_file_system(folder):
        # os.access says no write for a read-only mount too, whatever the mode allows.
        return f"its folder {folder} is on a file system mounted read-only"
    if not os.access(folder, os.X_OK):
        return f"you lack search (x) permission on its folder {folder}{_mode(folder)}"
    if path.exists():
        if not os.access(path, os.R_OK):
            return f"you lack read permission on the file{_mode(path)}"
        if write and not os.access(path, os.W_OK):
            if _immutable(path):
                return ("the file is immutable (chattr +i): nobody, its owner and root "
                        f"included, may write it; `chattr -i {path}` lifts that")
            return f"you lack write permission on the file{_mode(path)}"
        beside = [Path(f"{path}-{suffix}") for suffix in ("wal", "shm")]
        if not os.access(folder, os.W_OK) and not all(p.exists() for p in beside):
            if _read_only_file_system(folder):
                return (f"its folder {folder} is on a file system mounted read-only, where "
                        f"SQLite must keep {path.name}-wal and {path.name}-shm")
            return (f"you lack write permission on its folder {folder}{_mode(folder)}, where "
                    f"SQLite keeps {path.name}-wal and {path.name}-shm")
        for other in beside:
            if other.exists() and not os.access(other, os.R_OK | (os.W_OK if write else 0)):
                kind = "read and write" if write else "read"
                return f"you lack {kind} permission on {other}{_mode(other)}"
        return None
    if not os.access(folder, os.W_OK):
        return f"you lack write permission on its folder {folder}{_mode(folder)}"
    return None


def _mode(path: Path) -> str:
    try:
        info = path.stat()
    except OSError:
        return ""
    return f" (mode {stat.filemode(info.st_mode)}, owner uid {info.st_uid})"


def _read_only_file_system(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _immutable(path: Path) -> bool:
    """Opening for writing (nothing is written) says EPERM, not EACCES, for a file marked
    immutable, whatever its mode grants."""
    try:
        os.close(os.open(path, os.O_WRONLY))
    except OSError as e:
        return e.errno == errno.EPERM
    return False
