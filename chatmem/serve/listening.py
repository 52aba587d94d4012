"""Where an HTTP front end listens and how it runs: the address it binds, the bearer token
it was given or made here (required anywhere but this machine, and where this machine cannot
tell which of its accounts a connection comes from), and uvicorn's settings and start-up
(who may talk to it, by that token or by account: serve/guards.py)."""

from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from chatmem.errors import UsageError
from chatmem.serve.asgi import App
from chatmem.serve.connections import ConnectionGuard, Limits, deadlined
from chatmem.serve.peers import PROC_NET, accounts_shown
from chatmem.serve.server_logs import quiet_logs

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
               stopping: Callable[[int, int], None] | None = None,
               told_to_stop: Callable[[], None] | None = None,
               under_way: Callable[[], int] | None = None) -> None:
    """Serve `app` on `where` until interrupted; port 0 takes a free port, and `announce`
    hears the address really bound (and the token) before the first request is taken;
    `stopping` hears how many requests the server still waits for once it is told to stop
    (`under_way`'s count, else its open connections), and the signal that told it
    (_told_when_stopping); `told_to_stop` is called then, once."""
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
        _told_when_stopping(server, stopping, under_way)
    if told_to_stop is not None:
        _calls_when_told(server, told_to_stop)
    try:
        with _hangup_ends(server):
            server.run(sockets=[sock])
    finally:
        sock.close()


STOPPING_NOTICE_S = 0.5
"""Seconds after it is told to stop that a server still answering says what it waits for:
idle connections close at once, those it waits for are replies under way."""


def _told_when_stopping(server: uvicorn.Server, stopping: Callable[[int, int], None],
                        under_way: Callable[[], int] | None = None) -> None:
    """Once told to stop (SIGINT, SIGTERM, SIGHUP), `stopping` hears how many requests
    the server still waits for, if any, and the signal's number: it finishes and stores them
    first, which took as long as a slow model's reply (up to `idle_timeout`,
    `reply_timeout`), with not a word where Ctrl-C was pressed (uvicorn says so only at its
    info level), so the server looked hung, and a second Ctrl-C, which stops it at once,
    lost them unsaid. Only a SIGINT stops it at once (uvicorn's rule): after a SIGTERM
    (systemd, docker stop, kill) a second SIGTERM waits as the first did, so what stops it
    at once is worded by the signal that told it. `under_way`: what the server waits for,
    where an open connection is not one (`mcp --http`: a client's event stream, a GET open
    as long as its session, ends once the calls are answered, and was counted as one)."""
    import threading

    handle = server.handle_exit
    told: list[int] = []

    def handle_exit(number: int, frame: FrameType | None) -> None:
        handle(number, frame)
        if told or server.force_exit:
            return
        told.append(number)

        def waiting() -> None:
            waited = (len(server.server_state.connections) if under_way is None
                      else under_way())
            if waited and not server.force_exit:
                stopping(waited, number)

        timer = threading.Timer(STOPPING_NOTICE_S, waiting)
        timer.daemon = True
        timer.start()

    server.handle_exit = handle_exit  # type: ignore[method-assign,assignment]


def _calls_when_told(server: uvicorn.Server, told: Callable[[], None]) -> None:
    """`told` called the first time the server is told to stop (any signal)."""
    handle = server.handle_exit
    called: list[bool] = []

    def handle_exit(number: int, frame: FrameType | None) -> None:
        if not called:
            called.append(True)
            told()
        handle(number, frame)

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
