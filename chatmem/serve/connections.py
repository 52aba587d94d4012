"""How many requests an HTTP front end (serve, `mcp --http`) runs at once, how many
connections it holds, and for how long one may take to say what it wants, so that anyone able
to connect cannot make it unreachable before any token is checked: 20,000 connections that
never finished their headers took every open file (accept then failed, one traceback each
time, 91 MB of log in 50 s), and a connection dripping a header line every 5 s was kept for
ever.

Five things, each as uvicorn's public configuration lets it be done (the protocol class it is
given, and ASGI):
- past REQUESTS running at once, a request is answered 503 (ConnectionGuard). A request counts
  once its head is in: uvicorn's own `limit_concurrency` counted every open connection, so
  128 sockets that sent nothing, from anyone, made every request fail, token or not;
- at a ceiling of connections drawn from the open-files limit, a new connection makes room by
  closing the one heard from least recently among those without a request under way (a head
  not yet whole, or idle between requests); only when every connection has a request under
  way is the new one closed as it is accepted. A client sends its head within milliseconds
  of connecting, so a flood of idle sockets only closes its own;
- a deadline for a request's head and one for its body (Deadlined, the protocol uvicorn is
  given, and ConnectionGuard, the ASGI middleware that tells it where each request is):
  uvicorn's keep-alive timeout only runs between requests, and not before the first byte;
- a deadline for an answer nobody reads (Deadlined): a client that stopped reading
  mid-answer held its connection, its place among the requests and the reply's worker for
  ever. While the transport's buffer is full, it is closed (as a client that hangs up) once
  no byte has gone for SEND_SECONDS; a slow reader (1 KB/s) takes bytes, and is never cut;
- uvicorn's warnings any client can have it repeat once a request (an upgrade it does not
  serve, a malformed request) are one line per minute each, with a count, and running out of
  open files anyway is one line a minute, not a traceback per accept (serve/server_logs.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from dataclasses import dataclass, field, replace
from typing import Any

from chatmem.serve.asgi import App, Receive, Scope, Send, refuse
from chatmem.serve.server_logs import BUSY

REQUESTS = 128
"""Requests running at once before another is answered 503: far more than one person's
clients make (a browser opens six connections to a host, an MCP client one or two; serve's
turn.py takes 40 streams of a slow model in stride), far fewer than the descriptors a process
has."""
HEAD_SECONDS = 10.0
"""How long a connection may take to send a request's whole head, from when it connects or
its last answer ends: a client sends it in one write, within milliseconds on this machine or
a LAN; a connection dripping a line at a time is closed, however often it writes."""
BODY_SECONDS = 60.0
"""How long a request's body may take once its head is in: the largest body read (16 MiB)
arrives in that time at under 300 KB/s."""
SEND_SECONDS = 60.0
"""How long an answer may wait, its transport's buffer full, without the client taking a
byte of it: a client reading 1 KB/s takes some every few seconds."""
UNSENT_BYTES = 16 * 1024
"""What the kernel may hold of an answer not yet sent (TCP_NOTSENT_LOWAT): the bytes a client
takes show in the transport's buffer within seconds, where behind megabytes of the kernel's
a stalled client was seen after 100 s, and a 1 KB/s reader would look stalled."""
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
"""Connections held at once: at this many, a new one closes the connection heard from least
recently among those without a request under way, or, when all have one, is itself closed as
it is accepted."""


def _open_files() -> int | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


@dataclass(frozen=True)
class Limits:
    requests: int = REQUESTS
    ceiling: int = CEILING
    head_seconds: float = HEAD_SECONDS
    body_seconds: float = BODY_SECONDS
    keep_alive_seconds: int = KEEP_ALIVE_SECONDS
    head_bytes: int = HEAD_BYTES
    send_seconds: float = SEND_SECONDS

    def fitted(self) -> Limits:
        """These limits within this process's open-files limit (1024 by default on Linux)."""
        files = _open_files()
        ceiling = self.ceiling if files is None else min(self.ceiling, max(8, files // FILES_KEPT))
        return replace(self, requests=min(self.requests, ceiling), ceiling=ceiling)


_TOO_MANY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
             b"connection: close\r\ncontent-length: 28\r\n\r\ntoo many connections at once")


@dataclass
class ConnectionGuard:
    """The connections one server holds, by the client address a request's scope names
    (ASGI names no connection; a client's address and port are one connection's while it is
    open), those of them without a request under way, least recently heard from first, and
    the ASGI middleware telling each where its request is and answering 503 past the
    requests it may run at once."""

    app: App
    limits: Limits
    open: dict[tuple[str, int], Deadlined] = field(default_factory=dict)
    idle: dict[Deadlined, None] = field(default_factory=dict)
    """In the order last heard from (a dict keeps it, and drops one in O(1))."""
    running: int = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        held = self.open.get((str(client[0]), int(client[1]))) if client else None
        if held is not None:
            held.head_in()
            receive, send = held.watching(receive, send)
        if self.running >= self.limits.requests:
            # uvicorn's log, where its own warnings go; Repeated says it once a minute.
            logging.getLogger("uvicorn.error").warning(BUSY)
            await refuse(send, 503, "too many requests at once; try again shortly",
                         "server_busy", [(b"retry-after", b"1")])
            return
        self.running += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.running -= 1

    def heard(self, held: Deadlined) -> None:
        """`held`, without a request under way, was heard from (connected, sent a part of
        a head, or was answered): the last to be closed to make room."""
        self.idle.pop(held, None)
        self.idle[held] = None

    def make_room(self) -> bool:
        """Close the connection heard from least recently of those without a request under
        way (False: every connection has one). Dropped from `open` at once, as a closed
        connection's descriptor is given back on the loop's next turn."""
        oldest = next(iter(self.idle), None)
        if oldest is not None:
            oldest.evicted()
        return oldest is not None


class Deadlined(asyncio.Protocol):
    """uvicorn's HTTP protocol for one connection (h11's), closed when its request's head
    or body is not in by its deadline, when its client takes nothing of an answer for the
    send deadline, or when the server at its ceiling of connections makes room for a new
    one; and not kept at all when every connection it holds has a request under way."""

    guard: ConnectionGuard  # set on the subclass server_config makes

    def __init__(self, **uvicorn_arguments: Any) -> None:
        # h11 always, not `auto`'s httptools where it is installed (uvicorn[standard]): the
        # largest head (HEAD_BYTES) is h11's setting, and httptools bounds no header.
        from uvicorn.protocols.http.h11_impl import H11Protocol

        self.inner = H11Protocol(**uvicorn_arguments)
        self.loop = uvicorn_arguments.get("_loop") or asyncio.get_event_loop()
        self.transport: asyncio.Transport | None = None
        self.key: tuple[str, int] | None = None
        self.deadline: asyncio.TimerHandle | None = None
        self.refused = False
        self.sending: asyncio.TimerHandle | None = None  # while writing waits: the next look
        self.unsent = 0  # the fewest bytes the transport held since writing began to wait
        self.took_at = 0.0  # when the client last took any (the loop's clock)
        self.draining = False  # answered, and the answer not yet all gone

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if len(self.guard.open) >= self.guard.limits.ceiling and not self.guard.make_room():
            self.refused = True
            transport.write(_TOO_MANY)
            transport.close()  # the descriptor back at once; the inner protocol never sees it
            return
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple):
            self.key = (str(peer[0]), int(peer[1]))
            self.guard.open[self.key] = self
        self._waiting()
        _hold_little_unsent(transport)
        self.inner.connection_made(transport)

    def _due(self, seconds: float | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        self.deadline = None if seconds is None else self.loop.call_later(seconds, self._late)

    def _late(self) -> None:
        self.deadline = None
        self._abort()

    def _abort(self) -> None:
        if self.transport is not None:
            # abort, not close: close waits to send what is buffered, for ever to a client
            # that reads nothing, and the descriptor with it.
            self.transport.abort()

    def _waiting(self) -> None:
        """Waiting for a request's head, from now."""
        self._due(self.guard.limits.head_seconds)
        if self.key is not None:
            self.guard.heard(self)

    def watching(self, receive: Receive, send: Send) -> tuple[Receive, Send]:
        """A request's receive and send, telling this connection where its request is."""

        async def received() -> Any:
            message = await receive()
            if message.get("type") != "http.request" or not message.get("more_body"):
                self.body_in()
            return message

        async def sending(message: Any) -> None:
            if message.get("type") == "http.response.start":
                self.body_in()  # answered without reading it all: no body deadline
            await send(message)
            if message.get("type") == "http.response.body" and not message.get("more_body"):
                self.answered()

        return received, sending

    def head_in(self) -> None:
        self.draining = False  # a request under way: not idle, whatever is left to send
        self.guard.idle.pop(self, None)
        self._due(self.guard.limits.body_seconds)

    def body_in(self) -> None:
        self._due(None)  # the answer may take as long as the model does

    def answered(self) -> None:
        """The app sent its answer's end; the next request's head deadline starts once the
        answer has gone (a slow reader's tail was cut 10 s after the last write)."""
        self.draining = bool(self.transport and self.transport.get_write_buffer_size())
        if not self.draining:
            self._waiting()
        elif self.sending is None:
            self._watch()

    def evicted(self) -> None:
        self._forget()
        self._late()

    def _forget(self) -> None:
        self.guard.idle.pop(self, None)
        if self.key is not None and self.guard.open.get(self.key) is self:
            del self.guard.open[self.key]

    def data_received(self, data: bytes) -> None:
        if self in self.guard.idle:
            # Heard from: a head arriving in parts, or the next request on a kept-alive
            # connection whose head uvicorn may have parsed but not yet handed to the
            # guard (that waits for the loop's next turn), is not the one to close.
            self.guard.heard(self)
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        self.inner.eof_received()
        return None  # h11's closes the transport, as asyncio does for None

    def pause_writing(self) -> None:
        self._watch()  # the buffer is full: the client must take some of it now and then
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        if not self.draining:
            self._stop_looking()
        self.inner.resume_writing()

    def _watch(self) -> None:
        assert self.transport is not None
        self.unsent, self.took_at = self.transport.get_write_buffer_size(), self.loop.time()
        self._look_again()

    def _look_again(self) -> None:
        # Closed at 1 to 1.25 times the deadline after the last byte taken.
        limits = self.guard.limits
        self._stop_looking()
        self.sending = self.loop.call_later(min(limits.send_seconds, limits.head_seconds) / 4,
                                            self._sent)

    def _stop_looking(self) -> None:
        if self.sending is not None:
            self.sending.cancel()
            self.sending = None

    def _sent(self) -> None:
        """Whether the client took any of the answer since the last look; closed, as one
        that hangs up is (its turn cancelled), when it took none for the send deadline (one
        closing too: close() waits for its buffer to go, for ever to a client not reading)."""
        assert self.transport is not None
        unsent, now = self.transport.get_write_buffer_size(), self.loop.time()
        if not unsent:  # all gone: nothing to wait for
            self.sending = None
            if self.draining:
                self.draining = False
                self._waiting()  # the next head's deadline starts
            return
        if unsent < self.unsent:
            self.unsent, self.took_at = unsent, now
        elif now - self.took_at >= self.guard.limits.send_seconds:
            self._abort()
            return
        self._look_again()

    def connection_lost(self, exc: Exception | None) -> None:
        self._due(None)
        self._stop_looking()
        if self.refused:
            return  # closed at accept: the inner protocol never saw it
        self._forget()
        self.inner.connection_lost(exc)


def _hold_little_unsent(transport: asyncio.Transport) -> None:
    """The kernel holds at most UNSENT_BYTES of what is not yet sent, where the system lets
    a socket say so (Linux; elsewhere a slow reader's bytes show later, within its buffer)."""
    option, sock = getattr(socket, "TCP_NOTSENT_LOWAT", None), transport.get_extra_info("socket")
    if option is None or sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    with contextlib.suppress(OSError):  # a kernel without it: as it was
        sock.setsockopt(socket.IPPROTO_TCP, option, UNSENT_BYTES)


def deadlined(guard: ConnectionGuard) -> type[Deadlined]:
    """The protocol class uvicorn makes each connection's protocol from, for one server."""
    return type("Deadlined", (Deadlined,), {"guard": guard})
