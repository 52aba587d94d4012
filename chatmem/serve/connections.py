"""How many connections an HTTP front end (serve, `mcp --http`) holds, and for how long one
may take to say what it wants, so that anyone able to connect cannot make it unreachable
before any token is checked: 20,000 connections that never finished their headers took
every open file (accept then failed, one traceback each time, 91 MB of log in 50 s), and a
connection dripping a header line every 5 s was kept for ever.

Three things, each as uvicorn's public configuration lets it be done:
- uvicorn's `limit_concurrency`: a request made while that many connections are open (or
  that many requests run) is answered 503 at once instead of waiting;
- beyond a ceiling drawn from the open-files limit, a new connection is closed as soon as it
  is accepted, so the process keeps descriptors for its databases and its model calls;
- a deadline for a request's head and one for its body (Deadlined, the protocol uvicorn is
  given, and ConnectionGuard, the ASGI middleware that tells it where each request is):
  uvicorn's keep-alive timeout only runs between requests, and not before the first byte.

Running out of open files anyway (another part of the process took them) is one log line a
minute (OutOfFiles), not a traceback per accept."""

from __future__ import annotations

import asyncio
import errno
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from chatmem.serve.asgi import App, Receive, Scope, Send

CONNECTIONS = 128
"""Connections served at once before a request is answered 503: far more than one person's
clients open (a browser opens six to a host, an MCP client one or two; serve's turn.py takes
40 streams of a slow model in stride), far fewer than the descriptors a process has."""
HEAD_SECONDS = 10.0
"""How long a connection may take to send a request's whole head, from when it connects or
its last answer ends: a client sends it in one write, within milliseconds on this machine or
a LAN; a connection dripping a line at a time is closed, however often it writes."""
BODY_SECONDS = 60.0
"""How long a request's body may take once its head is in: the largest body read (16 MiB)
arrives in that time at under 300 KB/s."""
KEEP_ALIVE_SECONDS = 5
"""An idle connection between requests is closed after this (uvicorn's own default, said
here so that it is chosen, not inherited)."""
HEAD_BYTES = 16 * 1024
"""The largest request head (h11's incomplete event): a bearer token and a browser's
headers fit many times over; a bigger one is a 400 without being buffered further."""
FILES_KEPT = 2
"""Of the open-files limit, the share not given to connections: 1/2 of it is kept for the
databases, model calls and logs a served request opens."""
CEILING = 1024
"""Connections held at once beyond which a new one is closed as it is accepted: the ones
between CONNECTIONS and this are answered 503 or dropped at their head deadline."""


def _open_files() -> int | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


@dataclass(frozen=True)
class Limits:
    connections: int = CONNECTIONS
    ceiling: int = CEILING
    head_seconds: float = HEAD_SECONDS
    body_seconds: float = BODY_SECONDS
    keep_alive_seconds: int = KEEP_ALIVE_SECONDS
    head_bytes: int = HEAD_BYTES

    def fitted(self) -> Limits:
        """These limits within this process's open-files limit (1024 by default on Linux)."""
        files = _open_files()
        ceiling = self.ceiling if files is None else min(self.ceiling, max(8, files // FILES_KEPT))
        return Limits(min(self.connections, ceiling), ceiling, self.head_seconds,
                      self.body_seconds, self.keep_alive_seconds, self.head_bytes)


_TOO_MANY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
             b"connection: close\r\ncontent-length: 28\r\n\r\ntoo many connections at once")


@dataclass
class ConnectionGuard:
    """The connections one server holds, by the client address a request's scope names
    (ASGI names no connection; a client's address and port are one connection's while it is
    open), and the ASGI middleware telling each where its request is."""

    app: App
    limits: Limits
    open: dict[tuple[str, int], Deadlined] = field(default_factory=dict)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        held = self.open.get((str(client[0]), int(client[1]))) if client else None
        if scope["type"] != "http" or held is None:
            await self.app(scope, receive, send)
            return
        held.head_in()

        async def received() -> Any:
            message = await receive()
            if message.get("type") != "http.request" or not message.get("more_body"):
                held.body_in()
            return message

        async def sending(message: Any) -> None:
            if message.get("type") == "http.response.start":
                held.body_in()  # answered without reading it all: no body deadline
            await send(message)
            if message.get("type") == "http.response.body" and not message.get("more_body"):
                held.answered()

        await self.app(scope, received, sending)


class Deadlined(asyncio.Protocol):
    """uvicorn's HTTP protocol for one connection (h11 or httptools, as `http="auto"`
    picks), closed when its request's head or body is not in by its deadline; and not kept
    at all when the server already holds its ceiling of connections."""

    guard: ConnectionGuard  # set on the subclass server_config makes

    def __init__(self, **uvicorn_arguments: Any) -> None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        self.inner = AutoHTTPProtocol(**uvicorn_arguments)
        self.loop = uvicorn_arguments.get("_loop") or asyncio.get_event_loop()
        self.transport: asyncio.Transport | None = None
        self.key: tuple[str, int] | None = None
        self.deadline: asyncio.TimerHandle | None = None
        self.refused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if len(self.guard.open) >= self.guard.limits.ceiling:
            self.refused = True
            transport.write(_TOO_MANY)
            transport.close()  # the descriptor back at once; the inner protocol never sees it
            return
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple):
            self.key = (str(peer[0]), int(peer[1]))
            self.guard.open[self.key] = self
        self._due(self.guard.limits.head_seconds)
        self.inner.connection_made(transport)

    def _due(self, seconds: float | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        self.deadline = None if seconds is None else self.loop.call_later(seconds, self._late)

    def _late(self) -> None:
        self.deadline = None
        if self.transport is not None:
            self.transport.close()

    def head_in(self) -> None:
        self._due(self.guard.limits.body_seconds)

    def body_in(self) -> None:
        self._due(None)  # the answer may take as long as the model does

    def answered(self) -> None:
        self._due(self.guard.limits.head_seconds)  # the next request on this connection

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._due(None)
        if self.refused:
            return  # closed at accept: the inner protocol never saw it
        if self.key is not None and self.guard.open.get(self.key) is self:
            del self.guard.open[self.key]
        self.inner.connection_lost(exc)


def deadlined(guard: ConnectionGuard) -> type[Deadlined]:
    """The protocol class uvicorn makes each connection's protocol from, for one server."""
    return type("Deadlined", (Deadlined,), {"guard": guard})


class OutOfFiles(logging.Filter):
    """A log record of running out of open files (asyncio's accept, or a request that could
    not open a file) let through as one line, without its traceback, once per `every`
    seconds; the others in between are dropped."""

    def __init__(self, every: float = 60.0) -> None:
        super().__init__()
        self.every = every
        self.last: float | None = None
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not (isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE)):
            return True
        now = time.monotonic()
        if self.last is not None and now - self.last < self.every:
            self.dropped += 1
            return False
        since = f" ({self.dropped} more since the last)" if self.dropped else ""
        self.last, self.dropped = now, 0
        record.msg, record.args = (f"out of open files ({exc.strerror or exc}): new connections "
                                   f"wait until some close{since}"), None
        record.exc_info, record.exc_text = None, None
        return True


def quiet_when_out_of_files(every: float = 60.0) -> OutOfFiles:
    """OutOfFiles on the loggers that see it: asyncio's (accept) and uvicorn's (a request)."""
    kept = OutOfFiles(every)
    for name in ("asyncio", "uvicorn.error"):
        logging.getLogger(name).addFilter(kept)
    return kept
