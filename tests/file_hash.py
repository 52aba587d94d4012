"""What a history file holds: as one hash (the tests that reading commands never write), and
as its bytes with its WAL or journal (the tests that an erased text is nowhere on disk)."""

from __future__ import annotations

from pathlib import Path

from chatmem.store.sqlite_files import checkpointed_hash

__all__ = ["checkpointed_hash", "file_bytes"]


def file_bytes(db: Path) -> bytes:
    """The history file's bytes and those of any WAL or journal beside it, in name order."""
    return b"".join(p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")))
