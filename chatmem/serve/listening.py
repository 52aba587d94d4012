"""Where an HTTP front end listens, and who may talk to it: the address it binds and the
bearer token every request must carry (required anywhere but this machine)."""

from __future__ import annotations

import hmac
import ipaddress
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from chatmem.errors import UsageError

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Listening:
    host: str
    port: int
    token: str | None
    """Every request must carry `Authorization: Bearer TOKEN`; None: no token asked."""
    generated: bool = False
    """The token was made here (printed once for the person who started the server)."""

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def listening(address: str, token: str | None, *, what: str = "--http") -> Listening:
    """`[HOST:]PORT` (127.0.0.1 by default) and the token: given, else made here when the
    host is not this machine's loopback (a server open to the network never runs open)."""
    host, colon, port_text = address.rpartition(":")
    host = host.strip("[]") if colon else LOOPBACK
    port_text = port_text if colon else address
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f"{what} must be [HOST:]PORT, e.g. 8765 or 0.0.0.0:8765; got "
                         f"{address!r}") from None
    if not 0 <= port <= 65535:
        raise UsageError(f"{what}: port {port} is out of range (0–65535)")
    if not host:
        host = LOOPBACK
    if token is not None and not token.strip():
        raise UsageError("--token is empty")
    if token is None and not is_loopback(host):
        return Listening(host, port, secrets.token_urlsafe(32), generated=True)
    return Listening(host, port, token)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerGuard:
    """ASGI middleware: a request without `Authorization: Bearer TOKEN` gets 401, an
    OpenAI-shaped error, and never reaches the app (the token compared in constant time)."""

    def __init__(self, app: App, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        expected = f"Bearer {self.token}".encode()
        if hmac.compare_digest(given, expected):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": {"message": "missing or wrong bearer token",
                                     "type": "invalid_request_error", "param": None,
                                     "code": "invalid_api_key"}}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"),
                                (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": body})


def serve_http(app: App, where: Listening, announce: Callable[[Listening], None]) -> None:
    """Serve `app` on `where` until interrupted; port 0 takes a free port, and `announce`
    hears the address really bound (and the token) before the first request is taken."""
    import dataclasses
    import socket

    import uvicorn

    family = socket.AF_INET6 if ":" in where.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((where.host, where.port))
    except OSError as e:
        sock.close()
        raise UsageError(f"cannot listen on {where.url}: {e.strerror or e}") from None
    bound = dataclasses.replace(where, port=sock.getsockname()[1])
    announce(bound)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
