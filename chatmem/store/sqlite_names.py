"""The name SQLite is given for a history file, so that it opens the file at the path
chatmem checks, creates private and encrypts."""

from __future__ import annotations

import os
from pathlib import Path

from chatmem.config.location import IN_MEMORY


def sqlite_name(path: str | Path) -> str:
    """`path` as SQLite must be given it to open that very file.

    SQLite (built with SQLITE_USE_URI, as Debian's and SQLCipher's are) reads a name
    starting with `file:` as a URI whatever the connection asked: `--db file:z.db` opened
    z.db while chatmem made `file:z.db` private, checked its key and encrypted it, so the
    history sat in a file chatmem never protected. A relative path led by `./` is only
    ever a path; ":memory:" stays the in-memory database.
    """
    name = str(path)
    if name == IN_MEMORY or os.path.isabs(name):
        return name
    return os.path.join(os.curdir, name)
