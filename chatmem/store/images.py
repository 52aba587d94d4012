"""Images sent with a session's messages, kept once per session by the sha256 of their
bytes: a turn's context names an image by its hash, so resending one stores nothing new,
and deleting the session erases it (the rows go with the session)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from chatmem.images import ImageData
from chatmem.store.connection import Connection, fetch_rows, fetch_value


@dataclass(frozen=True)
class StoredImage:
    digest: str
    mime: str
    width: int
    height: int
    size: int
    """Bytes."""


class ImageTables:
    """Images sent with a session's messages (`store.images`)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._db = connection.db

    def keep_images(self, session_id: int, images: Sequence[ImageData]) -> None:
        """Store each image unless the session has it already (same bytes, same hash)."""
        if not images:
            return
        with self._db.write():
            for image in images:
                self._db.execute(
                    "INSERT INTO images (session_id, digest, mime, width, height, data,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (session_id, digest) DO NOTHING",
                    [session_id, image.digest, image.mime, image.width, image.height,
                     image.data, self._connection.now()])

    def images(self, session_id: int) -> list[StoredImage]:
        """The session's images, oldest first, without their bytes."""
        rows = fetch_rows(self._db, "SELECT digest, mime, width, height, length(data) AS size"
                          " FROM images WHERE session_id = ? ORDER BY created_at, digest",
                          [session_id])
        return [StoredImage(r["digest"], r["mime"], r["width"], r["height"], r["size"])
                for r in rows]

    def image_bytes(self, session_id: int, digest: str) -> bytes | None:
        """The bytes of the session's image of that sha256; None when it has none, or when
        the bytes stored under it are not that hash's: a write share's grantee who replaced
        the owner's image by plain SQL (PostgreSQL) put his picture under her hash, and her
        `inspect` and her resent turn showed it as the image she sent. Gone, not his."""
        data = fetch_value(self._db, "SELECT data FROM images WHERE session_id = ? AND digest = ?",
                           [session_id, digest])
        if data is None or hashlib.sha256(bytes(data)).hexdigest() != digest:
            return None
        return bytes(data)
