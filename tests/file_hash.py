"""What a history file holds, as one hash: the tests that reading commands never write."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path


def checkpointed_hash(db: Path) -> str:
    """The file's SHA-256 with its write-ahead log folded in (and the log's own bytes)."""
    connection = sqlite3.connect(db)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()
    digest = hashlib.sha256(db.read_bytes())
    wal = db.with_name(db.name + "-wal")
    if wal.exists():
        digest.update(wal.read_bytes())
    return digest.hexdigest()
