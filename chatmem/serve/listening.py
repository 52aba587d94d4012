"""Where an HTTP front end listens, and who may talk to it: the address it binds and the
bearer token every request must carry (required anywhere but this machine, and where this
machine cannot tell which of its accounts a connection comes from)."""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import re
import secrets
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from chatmem.errors import UsageError
from chatmem.serve.asgi import App, Receive, Scope, Send, refuse, refused_line
from chatmem.serve.connections import ConnectionGuard, Limits, deadlined
from chatmem.serve.origins import SERVE_PAGES, CrossOrigin, PagesAllowed
from chatmem.serve.peers import PROC_NET, accounts_shown, peer_uids
from chatmem.serve.server_logs import quiet_logs
from chatmem.serve.tokens_file import TokensFile

if TYPE_CHECKING:
    from types import FrameType

    import uvicorn

LOOPBACK = "127.0.0.1"


class TokenMade(Enum):
    """Why a token was made here when none was given."""

    BEYOND_THIS_MACHINE = "beyond this machine"
    ACCOUNTS_UNKNOWN = "accounts unknown"
    """On this machine's loopback, but this system does not show which account a connection
    comes from (no /proc/net: macOS, Windows), so any account could talk to it."""


@dataclass(frozen=True)
class Listening:
    host: str
    port: int
    token: str | None = field(repr=False)  # a repr (a log, a traceback's locals) never shows it
    """Every request must carry `Authorization: Bearer TOKEN`; None: no token asked, and only
    the account that started the server is answered (ThisMachineOnly)."""
    made: TokenMade | None = None
    """Why the token was made here (printed once for the person who started the server)."""
    accounts: Path = PROC_NET
    """Where this system lists each TCP connection with the account that opened it."""

    @property
    def generated(self) -> bool:
        return self.made is not None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def listening(address: str, token: str | None, *, what: str = "--http",
              tokens_given: bool = False, accounts: Path = PROC_NET) -> Listening:
    """`[HOST:]PORT` (127.0.0.1 by default) and the token: given, else made here when no
    tokens file names who may come and either the host is not this machine's loopback (a
    server open to the network never runs open) or this system does not show, at
    `accounts`, which account a loopback connection comes from (nor does one open to the
    machine's other accounts)."""
    host, colon, port_text = address.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]  # [::1]:8765
    host = host if colon else LOOPBACK
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
    if not _HOSTNAME.fullmatch(host) and not _is_address(host):
        raise UsageError(f"{what}: {host!r} is not a host name or an IP address")
    if token is not None and not token.strip():
        raise UsageError("--token is empty")
    if token is None and not tokens_given:
        made = (TokenMade.BEYOND_THIS_MACHINE if not is_loopback(host) else
                None if accounts_shown(host, accounts) else TokenMade.ACCOUNTS_UNKNOWN)
        if made is not None:
            return Listening(host, port, secrets.token_urlsafe(32), made, accounts)
    return Listening(host, port, token, accounts=accounts)


_HOSTNAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


HISTORY_SCOPE_KEY = "chatmem.db"
"""Where BearerGuard leaves the history a request's token names (None: the server's own)."""


class BearerGuard:
    """ASGI middleware: a request without `Authorization: Bearer TOKEN` for one of the known
    tokens gets 401, an OpenAI-shaped error, and never reaches the app (tokens compared in
    constant time). A token of the tokens file leaves its history in the request's scope;
    a tokens file is read again when it has changed (TokensFile), and while it cannot be
    used every request is refused (503), whatever its token."""

    def __init__(self, app: App, token: str | None,
                 tokens: Mapping[str, str] | TokensFile | None = None) -> None:
        self.app = app
        self.token = token
        self.tokens = tokens
        # Nothing asked: no token, no tokens. A tokens file emptied since is not this.
        self.open = token is None and not isinstance(tokens, TokensFile) and not tokens

    def _allowed(self) -> dict[str, str | None] | None:
        people = (self.tokens.current() if isinstance(self.tokens, TokensFile)
                  else self.tokens or {})
        if people is None:
            return None
        allowed: dict[str, str | None] = dict(people)
        if self.token is not None:
            allowed[self.token] = None
        return allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        allowed = self._allowed()
        if allowed is None:
            await refuse(send, 503, "the server cannot use its tokens file; its log says why",
                         "tokens_unavailable")
            return
        if self.open:
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        matched = [history for token, history in allowed.items()
                   if hmac.compare_digest(given, f"Bearer {token}".encode())]
        if matched:
            scope[HISTORY_SCOPE_KEY] = matched[0]
            await self.app(scope, receive, send)
            return
        await refuse(send, 401, "missing or wrong bearer token", "invalid_api_key",
                     [(b"www-authenticate", b"Bearer")])


class ThisMachineOnly:
    """ASGI middleware for a server on this machine's loopback without a token: only the
    programs of the account that started it may talk to it, not the web pages its browser
    shows, nor another account of this machine (anyone logged in may connect to 127.0.0.1).

    A page whose name was made to point here (DNS rebinding) may read the answers: it sends
    its own name as Host, so a Host that is not a loopback name gets 403 and never reaches
    the app (a page's Origin is PagesAllowed's, in front of this). So does a connection
    whose socket `accounts` does not show as opened by this process's uid, found
    again for every request: ASGI names no connection, and a port another account's socket
    takes after this one closed is the same client address. `refused` hears one line each
    time that happens, whichever the reason (the owner's log)."""

    def __init__(self, app: App, accounts: Path = PROC_NET,
                 refused: Callable[[str], None] | None = None) -> None:
        import os

        self.app = app
        self.accounts = accounts
        self.refused = refused
        self.uid = os.getuid() if hasattr(os, "getuid") else None
        self._last_checked: asyncio.Event | None = None
        """Set once the request that came last (and every one before it) is checked."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        why: str | None
        if not _names_this_machine(host):
            why = f"this server answers this machine only, not the host name {host!r}"
            self._heard(scope, f"its Host {host!r} is not a loopback name")
        else:
            # Let in in the order they came, whichever thread's look ended first: a
            # conversation's turns are taken in that order (serve/turn.Turn.start), and a
            # bot's messages sent 5 ms apart were stored u1 u2 u0 u3 u4.
            before, mine = self._last_checked, asyncio.Event()
            self._last_checked = mine
            try:
                why = await self._not_the_owner(scope)
                if before is not None:
                    await before.wait()
            finally:
                mine.set()
            if why is None:
                await self.app(scope, receive, send)
                return
        await refuse(send, 403, why, "forbidden")

    def _heard(self, scope: Scope, because: str) -> None:
        """A Host refusal in the owner's log, as another account's is: a page probing the
        server is worth knowing about."""
        if self.refused is not None:
            self.refused(refused_line(scope, because))

    async def _not_the_owner(self, scope: Scope) -> str | None:
        """Why the account this request comes from is not the one that started the server."""
        client, server = scope.get("client"), scope.get("server")
        # On a thread: where netlink cannot be asked, reading /proc/net takes milliseconds,
        # which other requests' replies streaming meanwhile should not wait for.
        uids = (await asyncio.to_thread(peer_uids, (client[0], client[1]),
                                        (server[0], server[1]), proc_net=self.accounts)
                if client and server else set())
        if uids == {self.uid}:
            return None
        came = f"{client[0]}:{client[1]}" if client else "an unknown address"
        doing = f"{scope.get('method', '')} {scope.get('path', '')}"
        if len(uids) == 1:
            why = (f"this server answers only the account that started it (uid {self.uid}), "
                   f"not uid {next(iter(uids))}; share it with --token")
            heard = f"refused {doing} from uid {next(iter(uids))} at {came}: not uid {self.uid}"
        else:
            why = ("this server answers only the account that started it, and which account "
                   "this connection comes from cannot be told")
            heard = (f"refused {doing} from {came}: its account is not found in "
                     f"{self.accounts}/tcp or tcp6")
        if self.refused is not None:
            self.refused(heard)
        return why


_HOST = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[0-9A-Za-z.\-]+))"
                   r"(?::[0-9]{1,5})?")
"""A Host header as RFC 9110 has one: `name[:port]` or `[IPv6][:port]`, nothing else."""


def _names_this_machine(host: str) -> bool:
    """Whether a Host header (`name[:port]`) names this machine's loopback. Read whole:
    `127.0.0.1:PORT@evil.example` (userinfo), a port not of digits, text after `]` are
    no Host anyone's program sends, and were taken as 127.0.0.1's."""
    given = _HOST.fullmatch(host)
    if given is None:
        return False
    return is_loopback((given["v6"] or given["name"]).lower())


def guarded(app: App, where: Listening, tokens: Mapping[str, str] | TokensFile | None = None,
            *, refused: Callable[[str], None] | None = None,
            origins: frozenset[str] = frozenset(), pages: CrossOrigin = SERVE_PAGES) -> App:
    """`app` as a server listening at `where` runs it: behind the bearer token when there is
    one (or a tokens file), else, on this machine's loopback, behind ThisMachineOnly; and in
    front of either, a web page is answered only from the server's own origin or `origins`
    (PagesAllowed, asking of it what `pages` says). `refused` hears each refusal of a page,
    a Host or another account, one line each. A tokens file, even one empty for now, names
    who may come: its tokens alone (and the token)."""
    if where.token is None and not isinstance(tokens, TokensFile) and not tokens:
        inner: App = ThisMachineOnly(app, where.accounts, refused)
    else:
        inner = BearerGuard(app, where.token, tokens)
    return PagesAllowed(inner, origins, pages, refused)


def server_config(app: App, limits: Limits | None = None) -> uvicorn.Config:
    """How uvicorn runs `app`: without proxy headers, since uvicorn would take the client's
    address from X-Forwarded-For (trusted from loopback), so any account could name a
    connection the owner holds open to the peer check; within `limits` (by default
    chatmem's, fitted to the open-files limit): requests run at once, connections held, how
    long a request may take to arrive; and with the warnings a client can repeat said once
    a minute (serve/connections.py)."""
    import uvicorn

    kept = (limits or Limits()).fitted()
    guard = ConnectionGuard(app, kept)
    quiet_logs()
    # No limit_concurrency: uvicorn counts every open connection in it, those that sent
    # nothing too, so that sockets anyone opens made every request fail (ConnectionGuard
    # counts requests instead).
    return uvicorn.Config(guard, log_level="warning", lifespan="on", proxy_headers=False,
                          http=deadlined(guard), timeout_keep_alive=kept.keep_alive_seconds,
                          h11_max_incomplete_event_size=kept.head_bytes)


def serve_http(app: App, where: Listening, announce: Callable[[Listening], None],
               stopping: Callable[[int, int], None] | None = None) -> None:
    """Serve `app` on `where` until interrupted; port 0 takes a free port, and `announce`
    hears the address really bound (and the token) before the first request is taken;
    `stopping` hears how many requests the server still waits for once it is told to stop,
    and the signal that told it (_told_when_stopping)."""
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
    # Listening before the address is announced: a client that connects while the server
    # still starts up waits in the queue instead of being refused.
    sock.listen(128)
    bound = dataclasses.replace(where, port=sock.getsockname()[1])
    announce(bound)
    server = uvicorn.Server(server_config(app))
    if stopping is not None:
        _told_when_stopping(server, stopping)
    try:
        with _hangup_ends(server):
            server.run(sockets=[sock])
    finally:
        sock.close()


STOPPING_NOTICE_S = 0.5
"""Seconds after it is told to stop that a server still answering says what it waits for:
idle connections close at once, those it waits for are replies under way."""


def _told_when_stopping(server: uvicorn.Server, stopping: Callable[[int, int], None]) -> None:
    """Once told to stop (SIGINT, SIGTERM, SIGHUP), `stopping` hears how many requests
    the server still waits for, if any, and the signal's number: it finishes and stores them
    first, which took as long as a slow model's reply (up to `idle_timeout`,
    `reply_timeout`), with not a word where Ctrl-C was pressed (uvicorn says so only at its
    info level), so the server looked hung, and a second Ctrl-C, which stops it at once,
    lost them unsaid. Only a SIGINT stops it at once (uvicorn's rule): after a SIGTERM
    (systemd, docker stop, kill) a second SIGTERM waits as the first did, so what stops it
    at once is worded by the signal that told it."""
    import threading

    handle = server.handle_exit
    told: list[int] = []

    def handle_exit(number: int, frame: FrameType | None) -> None:
        handle(number, frame)
        if told or server.force_exit:
            return
        told.append(number)

        def waiting() -> None:
            under_way = len(server.server_state.connections)
            if under_way and not server.force_exit:
                stopping(under_way, number)

        timer = threading.Timer(STOPPING_NOTICE_S, waiting)
        timer.daemon = True
        timer.start()

    server.handle_exit = handle_exit  # type: ignore[method-assign,assignment]


@contextmanager
def _hangup_ends(server: uvicorn.Server) -> Iterator[None]:
    """SIGHUP (the terminal closed, an ssh session dropped) ends the server as SIGTERM does:
    the replies under way finish and are stored before it exits, where uvicorn, which
    handles only SIGINT and SIGTERM, left it to kill the process mid-reply (the turn lost).
    It still exits as hung up, once done. Under nohup (SIGHUP ignored) nothing changes."""
    import signal
    import threading

    hangup = getattr(signal, "SIGHUP", None)  # none on Windows
    if (hangup is None or threading.current_thread() is not threading.main_thread()
            or signal.getsignal(hangup) is signal.SIG_IGN):
        yield
        return
    heard: list[int] = []

    def hung_up(number: int, frame: FrameType | None) -> None:
        heard.append(number)
        server.handle_exit(number, frame)  # as SIGTERM: finish what is under way, then end

    before = signal.signal(hangup, hung_up)
    try:
        yield
    finally:
        signal.signal(hangup, before)
    if heard:
        signal.raise_signal(hangup)
