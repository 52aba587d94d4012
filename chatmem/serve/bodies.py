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
"""The encodings inflated, as zlib reads them (HTTP's deflate is the zlib format; a body
without zlib's two-byte header is read as raw deflate, as some clients send it)."""
MAX_MEMBERS = 16
"""The gzip members (`cat a.gz b.gz`) one body may be: each costs a new inflater, so 200,000
empty ones in 4 MB held a worker for seconds."""


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


def _zlib_header(head: bytes) -> bool:
    """Whether a deflate body's first two bytes are zlib's header (RFC 1950: method 8, a
    window of at most 32 KiB, a check that makes them a multiple of 31). Raw deflate cannot
    start so: those bits would be a stored block with its padding bits set."""
    return head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and (head[0] << 8 | head[1]) % 31 == 0


class _Inflater:
    """One coding's inflation, given the body piece by piece; a gzip body may be several
    members one after the other (`cat a.gz b.gz`), each inflated in turn, up to MAX_MEMBERS,
    and zero bytes after a member are padding, as gunzip and Python's gzip read them."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        # deflate: which form is known from the first two bytes (kept here until they come)
        self.inflating = None if coding == "deflate" else zlib.decompressobj(_WBITS[coding])
        self.head = b""
        self.members = 1
        self.size = 0

    def feed(self, piece: bytes) -> bytes | BodyRefused:
        """The inflated bytes of `piece`, or why the body is refused: it inflates past the
        cap (not inflated further), it is not of the coding, or it has too many members."""
        if self.inflating is None:
            self.head += piece
            if len(self.head) < 2:
                return b""
            piece, self.head = self.head, b""
            self.inflating = zlib.decompressobj(
                zlib.MAX_WBITS if _zlib_header(piece) else -zlib.MAX_WBITS)
        out: list[bytes] = []
        while piece:
            if self.inflating.eof:
                if self.coding == "deflate":
                    return _not_encoded(self.coding)
                piece = piece.lstrip(b"\0")
                if not piece:
                    break
                self.members += 1
                if self.members > MAX_MEMBERS:
                    return BodyRefused(400, RequestError(
                        f"the body is more than {MAX_MEMBERS} {self.coding} members one after "
                        "the other: compress it as one", "Content-Encoding"))
                self.inflating = zlib.decompressobj(_WBITS[self.coding])
            room = MAX_BODY_BYTES - self.size
            try:
                made = self.inflating.decompress(piece, room + 1)
            except zlib.error:
                return _not_encoded(self.coding)
            self.size += len(made)
            if self.size > MAX_BODY_BYTES:
                return _too_large(True)
            out.append(made)
            # What was left unread: past the end of a member, the next member's bytes.
            piece = self.inflating.unused_data if self.inflating.eof else b""
        return b"".join(out)

    @property
    def whole(self) -> bool:
        return self.inflating is not None and self.inflating.eof


async def capped_body(request: Request) -> bytes | BodyRefused:
    """The request's body, or why not: over MAX_BODY_BYTES (413), said by its Content-Length
    before any of it is read, else found while it streams in (chunked) or inflates; in an
    encoding not inflated here (415); not whole or not of its encoding, or more gzip members
    than MAX_MEMBERS (400)."""
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
            inflated = inflater.feed(piece)
            if isinstance(inflated, BodyRefused):
                return inflated
            piece = inflated
        pieces.append(piece)
    if inflater is not None and not inflater.whole:
        return _not_encoded(codings[0])
    return b"".join(pieces)


def _not_encoded(coding: str) -> BodyRefused:
    return BodyRefused(400, RequestError(
        f"the body is not whole {coding} data, as its Content-Encoding says", "Content-Encoding"))
