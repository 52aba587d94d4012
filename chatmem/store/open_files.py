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
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

FileKind = Literal["missing", "plain", "encrypted", "other"]
"""What a file's first bytes say (chatmem.store.cipher.file_kind)."""

OPENING = threading.RLock()
"""Held while a file is checked and registered, so no connection opens in between."""


@dataclass
class _Held:
    connections: int
    kind: FileKind
    """What the file's header said when the first of them opened it."""


_held: dict[tuple[int, int], _Held] = {}
"""By (device, inode): the files this process holds open."""


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def held_kind(path: Path) -> FileKind | None:
    """What the header of `path` said when this process opened it, while a connection of
    this process holds it open; None otherwise (the header may then be read)."""
    identity = _identity(path)
    with OPENING:
        held = _held.get(identity) if identity is not None else None
        return None if held is None else held.kind


def hold(path: Path, kind: FileKind) -> Callable[[], None]:
    """Count one more connection to `path` (a file of `kind`); returns what uncounts it."""
    identity = _identity(path)
    if identity is None:
        return lambda: None
    with OPENING:
        held = _held.setdefault(identity, _Held(0, kind))
        held.connections += 1
    released = False

    def release() -> None:
        nonlocal released
        with OPENING:
            if released:
                return
            released = True
            held.connections -= 1
            if not held.connections and _held.get(identity) is held:
                del _held[identity]

    return release
