"""Who may talk to an HTTP front end: the bearer token every request must carry, or, on this
machine's loopback without one, only the programs of the account that started it; and in
front of either, which web pages may (PagesAllowed)."""

from __future__ import annotations

import asyncio
import hmac
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from chatmem.serve.asgi import App, Receive, Scope, Send, refuse, refused_line
from chatmem.serve.listening import Listening, is_loopback
from chatmem.serve.origins import SERVE_PAGES, CrossOrigin, PagesAllowed
from chatmem.serve.peers import PROC_NET, peer_uids
from chatmem.serve.tokens_file import TokensFile

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
