"""The history files this process holds open, so that none is read with plain file I/O
meanwhile.

Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's
included: SQLite keeps its own descriptors open until its last connection to a file closes,
but it cannot know of ours. Reading a file's first bytes (is it plain or encrypted?) while
another connection of this process is open would free that connection's locks. Another
process could then take itself for the file's last user and fold and remove the write-ahead
log under that connection, which then reads pages that are not there any more ("database
disk image is malformed", or the rows of another table). A server that keeps connections
open (chatmem serve) opens the file again for every request, so the header is read once,
while no connection of this process holds the file, and remembered until the last closes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

OPENING = threading.RLock()
"""Held while a file is checked and registered, so no connection opens in between."""

_held: dict[tuple[int, int], list[object]] = {}
"""(device, inode) → [connections open, the kind its header said]."""


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def held_kind(path: Path) -> str | None:
    """What the header of `path` said when this process opened it, while a connection of
    this process holds it open; None otherwise (the header may then be read)."""
    identity = _identity(path)
    with OPENING:
        held = _held.get(identity) if identity is not None else None
        return None if held is None else str(held[1])


def hold(path: Path, kind: str) -> Callable[[], None]:
    """Count one more connection to `path` (a file of `kind`); returns what uncounts it."""
    identity = _identity(path)
    if identity is None:
        return lambda: None
    with OPENING:
        held = _held.setdefault(identity, [0, kind])
        held[0] = int(held[0]) + 1  # type: ignore[call-overload]
    released = False

    def release() -> None:
        nonlocal released
        with OPENING:
            if released:
                return
            released = True
            held[0] = int(held[0]) - 1  # type: ignore[call-overload]
            if not held[0] and _held.get(identity) is held:
                del _held[identity]

    return release
