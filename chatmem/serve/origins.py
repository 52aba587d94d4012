"""Which web pages may talk to an HTTP front end: a request that carries an `Origin` (a page
the browser shows, or an extension) is answered only when that origin is the server's own
or one its owner allowed (`--allow-origin`), and then with the CORS headers that let the
page read the answer.

A page may send a POST of `text/plain` (or a form) without asking first (a "simple
request"); the body was read as JSON whatever its type, so any page on any loopback port
could plant turns. A request from a page is therefore taken only as
`Content-Type: application/json`, which a browser sends only after asking (a preflight,
answered here for the allowed origins) and only from a page allowed to. Programs (SDKs,
curl) send no Origin and are not concerned."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from chatmem.errors import UsageError
from chatmem.serve.asgi import App, Receive, Scope, Send, refuse, refused_line


@dataclass(frozen=True)
class CrossOrigin:
    """What an allowed page may ask of a front end, as its preflight is answered."""

    methods: tuple[str, ...]
    request_headers: tuple[str, ...]
    """The headers the page may send beyond those a browser sends unasked, told even when
    its preflight asks none; any other header an allowed page asks for is allowed too."""
    exposed: tuple[str, ...]
    """The response headers the page may read beyond the usual ones."""


SERVE_PAGES = CrossOrigin(
    ("GET", "POST"),
    ("authorization", "content-type", "x-chatmem-conversation", "x-openwebui-chat-id"),
    ("x-chatmem-turn", "x-chatmem-conversation", "x-chatmem-stored-as"))
MCP_PAGES = CrossOrigin(
    ("GET", "POST", "DELETE"),
    ("authorization", "content-type", "accept", "mcp-session-id", "mcp-protocol-version",
     "last-event-id"),
    ("mcp-session-id", "mcp-protocol-version"))

_DEFAULT_PORTS = {"http": 80, "https": 443}
_HEADER_NAME = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""A header name as HTTP spells one (RFC 9110's token)."""
_WITH_BODY = ("POST", "PUT", "PATCH")


def origin_key(origin: str) -> str | None:
    """An origin as browsers serialize it (scheme and host in lower case, no default port),
    so `HTTP://LocalHost:3000` given on the command line matches the `http://localhost:3000`
    a browser sends; None for what is no origin ("null": a sandboxed page or a file)."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None  # a malformed port or IPv6 address
    host = parts.hostname
    if (not parts.scheme or not host or parts.username is not None
            or parts.password is not None or parts.path not in ("", "/")
            or parts.query or parts.fragment):
        return None
    scheme = parts.scheme.lower()
    shown = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        shown = f"{shown}:{port}"
    return f"{scheme}://{shown}"


def allowed_origins(given: Iterable[str], *, what: str = "--allow-origin") -> frozenset[str]:
    """The origins the owner allows (`--allow-origin`), each checked: a bad one is said now,
    not as every request of the page it meant refused."""
    allowed = set()
    for origin in given:
        key = origin_key(origin)
        if key is None or origin.strip() == "*":
            raise UsageError(f"{what}: {origin!r} is not an origin: give SCHEME://HOST[:PORT], "
                             "e.g. http://localhost:3000 (each page's origin on its own)")
        allowed.add(key)
    return frozenset(allowed)


def _own(scope: Scope) -> str | None:
    """The server's own origin as this connection reached it (the address and port it
    listens on)."""
    server = scope.get("server")
    if not server or server[1] is None:
        return None
    return origin_key(f"http://{'[' + server[0] + ']' if ':' in server[0] else server[0]}"
                      f":{server[1]}")


class PagesAllowed:
    """ASGI middleware, in front of every other guard: a request with an Origin that is
    neither the server's own nor allowed gets 403 and one line in the owner's log; one from
    an allowed page is answered with its origin in `Access-Control-Allow-Origin` (its
    preflight too, before any token is asked: a browser sends none with it), and a body it
    sends must be `Content-Type: application/json` (else 415)."""

    def __init__(self, app: App, allowed: frozenset[str], pages: CrossOrigin,
                 refused: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.allowed = allowed
        self.pages = pages
        self.refused = refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        raw = headers.get(b"origin")
        if raw is None:
            await self.app(scope, receive, send)
            return
        origin = raw.decode("latin-1")
        key = origin_key(origin)
        if key is None or (key != _own(scope) and key not in self.allowed):
            self._heard(scope, f"its Origin {origin!r} is another site's (not allowed with "
                               "--allow-origin)")
            await refuse(send, 403, "this server answers web pages only of the origins its "
                         "owner allowed (--allow-origin)", "forbidden")
            return
        answer = [(b"access-control-allow-origin", raw), (b"vary", b"Origin")]
        method = scope.get("method", "")
        if method == "OPTIONS" and b"access-control-request-method" in headers:
            await self._preflight(send, answer, headers)
            return
        if method in _WITH_BODY and not _json(headers.get(b"content-type", b"")):
            sent = headers.get(b"content-type", b"").decode("latin-1")
            self._heard(scope, f"its Origin {origin!r} sent a body of Content-Type {sent!r}")
            await refuse(send, 415, "a request from a web page must be Content-Type: "
                         "application/json", "unsupported_media_type", answer)
            return
        exposed = ", ".join(self.pages.exposed).encode()
        answer.append((b"access-control-expose-headers", exposed))

        async def with_origin(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *answer]}
            await send(message)

        await self.app(scope, receive, with_origin)

    async def _preflight(self, send: Send, answer: list[tuple[bytes, bytes]],
                         headers: dict[bytes, bytes]) -> None:
        """What an allowed page may send, told before it sends it; a page on the public web
        asking to reach this machine (Chrome's private network access) was allowed by the
        owner too, by its origin."""
        told = [*answer,
                (b"access-control-allow-methods", ", ".join(self.pages.methods).encode()),
                (b"access-control-allow-headers", self._headers_allowed(headers)),
                (b"access-control-max-age", b"600")]
        if headers.get(b"access-control-request-private-network", b"").lower() == b"true":
            told.append((b"access-control-allow-private-network", b"true"))
        await send({"type": "http.response.start", "status": 204, "headers": told})
        await send({"type": "http.response.body", "body": b""})

    def _headers_allowed(self, headers: dict[bytes, bytes]) -> bytes:
        """Ours, and every header the page asked to send that is a header's name: the owner
        allowed the page by its origin, and what it may send was never the guard (a token
        is). A fixed list refused the OpenAI JS SDK's x-stainless-* (sent on every request,
        more with each version) and Content-Encoding, so the browser sent nothing at all."""
        asked = headers.get(b"access-control-request-headers", b"").split(b",")
        names = dict.fromkeys(name.encode() for name in self.pages.request_headers)
        for name in asked:
            name = name.strip().lower()
            if _HEADER_NAME.fullmatch(name):
                names[name] = None
        return b", ".join(names)

    def _heard(self, scope: Scope, because: str) -> None:
        """A page probing the server is worth knowing about: one line in the owner's log."""
        if self.refused is not None:
            self.refused(refused_line(scope, because))


def _json(content_type: bytes) -> bool:
    return content_type.split(b";")[0].strip().lower() == b"application/json"
