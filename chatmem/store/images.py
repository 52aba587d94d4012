"""Images sent with a session's messages, kept once per session by the sha256 of their
bytes: a turn's context names an image by its hash, so resending one stores nothing new,
and deleting the session erases it (the rows go with the session)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chatmem.images import ImageData
from chatmem.store.connection import Connection


@dataclass(frozen=True)
class StoredImage:
    digest: str
    mime: str
    width: int
    height: int
    size: int
    """Bytes."""


class ImageTables(Connection):
    def keep_images(self, session_id: int, images: Sequence[ImageData]) -> None:
        """Store each image unless the session has it already (same bytes, same hash)."""
        if not images:
            return
        with self.write():
            for image in images:
                self.db.execute(
                    "INSERT INTO images (session_id, digest, mime, width, height, data,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (session_id, digest) DO NOTHING",
                    [session_id, image.digest, image.mime, image.width, image.height,
                     image.data, self.now()])

    def images(self, session_id: int) -> list[StoredImage]:
        """The session's images, oldest first, without their bytes."""
        rows = self._rows("SELECT digest, mime, width, height, length(data) AS size"
                          " FROM images WHERE session_id = ? ORDER BY created_at, digest",
                          [session_id])
        return [StoredImage(r["digest"], r["mime"], r["width"], r["height"], r["size"])
                for r in rows]

    def image_bytes(self, session_id: int, digest: str) -> bytes | None:
        data = self._value("SELECT data FROM images WHERE session_id = ? AND digest = ?",
                           [session_id, digest])
        return bytes(data) if data is not None else None
