"""Deadlines for one streamed reply: a total one, and an idle one between pieces of it.

The HTTP client's timeout only bounds each socket read, so a server that answers
200 and then sends only SSE keep-alive comments (`: keepalive`), or drips a few
characters at a time, is never timed out by it. The reply marks each piece it
receives (`progress`); the response body is read through `WatchedBody`, which
checks both deadlines on every chunk of bytes that arrives, keep-alive comments
included, so a server that keeps the connection busy without replying is stopped.
It also counts the bytes: a server that ignores the reply cap in one endless `data:` line
never completes a piece, so only the bytes read show it is past the cap.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx2

from chatmem.errors import ProviderResponseError, ProviderTimeout


class ReplyDeadline:
    """When one reply must be complete by, how long it may go without a new piece, and how
    many bytes of body it may take (`most_bytes`)."""

    def __init__(self, where: str, total: float, idle: float,
                 most_bytes: float = float("inf")) -> None:
        self.where = where
        self.total = total
        self.idle = idle
        self.most_bytes = most_bytes
        self.bytes_read = 0
        self.started = time.monotonic()
        self.last_piece = self.started

    def answering(self) -> None:
        """The server answered (headers in): idle time counts from here."""
        self.last_piece = time.monotonic()

    def progress(self) -> None:
        """A piece of the reply arrived."""
        self.last_piece = time.monotonic()

    def read(self, size: int) -> None:
        """`size` more bytes of the body arrived: past `most_bytes` the server is sending
        more than any reply within the cap holds, and reading stops."""
        self.bytes_read += size
        if self.bytes_read > self.most_bytes:
            raise ProviderResponseError(
                f"{self.where} sent more than {self.most_bytes:,.0f} bytes for one reply,"
                " more than the reply-length limit (max_reply_tokens) allows: it ignores the"
                " limit; nothing was kept")

    def check(self) -> None:
        now = time.monotonic()
        if now - self.started > self.total:
            raise ProviderTimeout(
                f"{self.where} had not finished the reply after {self.total:g} s"
                " (reply_timeout): nothing was kept; raise reply_timeout or check the server")
        if now - self.last_piece > self.idle:
            raise ProviderTimeout(
                f"{self.where} sent no part of the reply for {self.idle:g} s"
                " (idle_timeout): nothing was kept; raise idle_timeout or check the server")


class WatchedBody(httpx2.SyncByteStream):
    """A response body that checks a deadline on every chunk of bytes as it arrives."""

    def __init__(self, stream: httpx2.SyncByteStream, deadline: ReplyDeadline) -> None:
        self._stream = stream
        self._deadline = deadline

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            self._deadline.read(len(chunk))
            self._deadline.check()
            yield chunk

    def close(self) -> None:
        self._stream.close()


def watch_body(response: httpx2.Response, deadline: ReplyDeadline) -> None:
    """Have `response`'s body read through `deadline` (called once its headers are in)."""
    if isinstance(response.stream, httpx2.SyncByteStream):
        deadline.answering()
        response.stream = WatchedBody(response.stream, deadline)
