"""Images attached to a message: what they are (type and size, read from their header),
what they cost in tokens by an endpoint's rule, and how they travel (a data: URL).

No image library: PNG, JPEG, GIF and WebP say their size in their first bytes.
"""

from __future__ import annotations

import base64
import hashlib
import math
import struct
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

MAX_BYTES = 20 * 1024 * 1024
"""OpenAI's limit for one image."""


class ImageRule(StrEnum):
    """How an endpoint counts an image's tokens; a provider that sees images names one."""

    OPENAI_TILES = "openai-tiles"
    """OpenAI's rule at detail "high": fit in 2048×2048, shortest side to 768, then
    85 tokens + 170 per 512-pixel tile."""


@dataclass(frozen=True)
class ImageRef:
    """An image as a message carries it: by content hash, with what inspect shows."""

    digest: str
    """sha256 of its bytes, hex: how the history keeps it, once per session."""
    mime: str
    width: int
    height: int
    tokens: int
    rule: str

    def to_json(self) -> dict[str, object]:
        return {"sha256": self.digest, "mime": self.mime, "width": self.width,
                "height": self.height, "tokens": self.tokens, "rule": self.rule}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ImageRef:
        return cls(str(data["sha256"]), str(data["mime"]), int(str(data["width"])),
                   int(str(data["height"])), int(str(data["tokens"])), str(data["rule"]))


@dataclass(frozen=True)
class ImageData:
    """An image file's bytes with its type and size."""

    mime: str
    width: int
    height: int
    data: bytes

    # Each worked out once per image, however many times it is counted and sent (/attach
    # counts it, the turn sends it, a retry sends it again): a photo is megabytes.
    @cached_property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @cached_property
    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def ref(self, rule: ImageRule) -> ImageRef:
        return ImageRef(self.digest, self.mime, self.width, self.height,
                        image_tokens(self.width, self.height, rule), rule.value)


def image_tokens(width: int, height: int, rule: ImageRule) -> int:
    """Tokens the endpoint bills for an image of this size (only OpenAI's rule so far)."""
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return 85 + 170 * tiles


def image_mime(data: bytes) -> str | None:
    """The image type `data` starts as (its first 12 bytes tell), or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def read_image(data: bytes) -> ImageData | None:
    """`data` as an image when it is a PNG, JPEG, GIF or WebP whose size can be read."""
    size = None
    mime = image_mime(data) or ""
    if mime == "image/png" and len(data) >= 24:
        size = struct.unpack(">II", data[16:24])
    elif mime == "image/gif" and len(data) >= 10:
        size = struct.unpack("<HH", data[6:10])
    elif mime == "image/jpeg":
        size = _jpeg_size(data)
    elif mime == "image/webp":
        size = _webp_size(data)
    if size is None or min(size) <= 0:
        return None
    return ImageData(mime, int(size[0]), int(size[1]), data)


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2:i + 4])
        # SOF0..SOF15 hold the size, except DHT (C4), JPG (C8) and DAC (CC).
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None
