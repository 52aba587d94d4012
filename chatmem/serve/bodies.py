"""A request's body as `chatmem serve` reads it: never more than MAX_BODY_BYTES, counted as
it streams in and, for a compressed body (`Content-Encoding: gzip` or `deflate`), counted
again as it is inflated, piece by piece, so a small body that inflates to gigabytes (a zip
bomb) is refused once its inflated bytes pass the cap, without inflating further."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from starlette.requests import Request

from chatmem.errors import RequestError
from chatmem.serve.requests import MAX_BODY_BYTES

_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
"""The encodings inflated, as zlib reads them (HTTP's deflate is the zlib format)."""


@dataclass(frozen=True)
class BodyRefused:
    """Why a body is not read, and the HTTP status it is answered with."""

    status: int
    error: RequestError


def _too_large(inflated: bool) -> BodyRefused:
    once = " once inflated" if inflated else ""
    return BodyRefused(413, RequestError(
        f"the body is over {MAX_BODY_BYTES // 2**20} MiB{once}, more than any model's context "
        "holds: send less of the history", "messages"))


class _Inflater:
    """One coding's inflation, given the body piece by piece; a gzip body may be several
    members one after the other (`cat a.gz b.gz`), each inflated in turn."""

    def __init__(self, coding: str) -> None:
        self.wbits = _WBITS[coding]
        self.coding = coding
        self.inflating = zlib.decompressobj(self.wbits)
        self.size = 0

    def feed(self, piece: bytes) -> bytes | None:
        """The inflated bytes of `piece`; None once the body inflates past the cap (not
        inflated further). zlib.error for bytes that are not of the coding."""
        out: list[bytes] = []
        while piece:
            room = MAX_BODY_BYTES - self.size
            if self.inflating.eof:
                if self.coding == "deflate":
                    raise zlib.error("data after the end of the deflate stream")
                self.inflating = zlib.decompressobj(self.wbits)
            made = self.inflating.decompress(piece, room + 1)
            self.size += len(made)
            if self.size > MAX_BODY_BYTES:
                return None
            out.append(made)
            # What was left unread: past the end of a member, the next member's bytes.
            piece = self.inflating.unused_data if self.inflating.eof else b""
        return b"".join(out)

    @property
    def whole(self) -> bool:
        return self.inflating.eof


async def capped_body(request: Request) -> bytes | BodyRefused:
    """The request's body, or why not: over MAX_BODY_BYTES (413), said by its Content-Length
    before any of it is read, else found while it streams in (chunked) or inflates; in an
    encoding not inflated here (415); not whole or not of its encoding (400)."""
    encoding = request.headers.get("content-encoding", "")
    codings = [c.strip().lower() for c in encoding.split(",")
               if c.strip() and c.strip().lower() != "identity"]
    if len(codings) > 1 or (codings and codings[0] not in _WBITS):
        return BodyRefused(415, RequestError(
            f"Content-Encoding {encoding!r} is not read here: send the body as it is, or "
            "gzip or deflate it", "Content-Encoding"))
    length = request.headers.get("content-length", "")
    if length.isascii() and length.isdigit() and int(length) > MAX_BODY_BYTES:
        return _too_large(False)
    inflater = _Inflater(codings[0]) if codings else None
    pieces: list[bytes] = []
    size = 0
    async for piece in request.stream():
        size += len(piece)
        if size > MAX_BODY_BYTES:
            return _too_large(False)
        if inflater is not None and piece:
            try:
                inflated = inflater.feed(piece)
            except zlib.error:
                return _not_encoded(codings[0])
            if inflated is None:
                return _too_large(True)
            piece = inflated
        pieces.append(piece)
    if inflater is not None and not inflater.whole:
        return _not_encoded(codings[0])
    return b"".join(pieces)


def _not_encoded(coding: str) -> BodyRefused:
    return BodyRefused(400, RequestError(
        f"the body is not whole {coding} data, as its Content-Encoding says", "Content-Encoding"))
