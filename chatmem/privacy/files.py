"""Files only their owner can read: exports, archives, reports and configs hold the
conversation (or a key in a base_url), so chatmem creates every such file 0600."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any


def open_private(path: Path, *, binary: bool = False, replace: bool = True) -> IO[Any]:
    """`path` opened for writing, readable by its owner only (0600), also when it replaces a
    file another made readable by all (the mode of a file kept is its own otherwise).

    `replace=False` refuses an existing file (FileExistsError) instead of emptying it. A
    symbolic link at `path` is replaced by the file, never written through: the file it
    points at (notes, a config) is someone else's to lose.
    """
    if replace and path.is_symlink():
        path.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if replace else os.O_EXCL)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding="utf-8")
