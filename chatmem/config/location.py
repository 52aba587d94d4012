"""Where a history lives: a SQLite file, or a PostgreSQL database named by a URL.

`--db`, CHATMEM_DB and the config's `db` all give one string, parsed here once
into a HistoryLocation that is passed down: the store opens what it is given and
never reads a string again. A `postgresql://` or `postgres://` one (the scheme in
any case) is a server, any other `scheme://` is refused, anything else is a file
path. A URL's password is never shown: every message names the database by
`masked(url)`. The password is best kept out of the URL (and so out of the
process list): libpq reads PGPASSWORD, ~/.pgpass (PGPASSFILE) and a service file
(`?service=NAME`, PGSERVICE, PGSERVICEFILE) itself.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from chatmem.config.paths import user_path
from chatmem.errors import StoreError
from chatmem.text import CONTROLS, code_point, is_valid

SCHEMES = ("postgresql://", "postgres://")
LOCAL_HOSTS = frozenset({"", "localhost", "127.0.0.1", "::1", "[::1]"})
_SECRET_PARAMETERS = ("password", "sslpassword")
IN_MEMORY = ":memory:"
"""The in-memory database chatmem opens for scratch work (eval replay, what-if)."""
_URL_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_CONTROL = re.compile(f"[\t\n{CONTROLS.pattern[1:-1]}]")
"""Every control character, tab and newline too: none belongs in a path or a URL."""


class LocationKind(StrEnum):
    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"


@dataclass(frozen=True)
class HistoryLocation:
    kind: LocationKind
    target: str = field(repr=False)  # a URL's password: a repr (a traceback's locals) shows `shown`
    """The file path, or the URL to connect with (scheme in lower case, sslmode added where
    the TLS rule asks)."""
    shown: str
    """What messages name: the path, or the URL with its password masked."""
    database: str = ""
    """PostgreSQL: the database the URL names ("" when a service file names it)."""

    @classmethod
    def file(cls, path: str | Path) -> HistoryLocation:
        """A SQLite file (or ":memory:"): a path is never read as a URL."""
        return cls(LocationKind.SQLITE, str(path), str(path))

    @property
    def path(self) -> Path:
        """The history file; only a SQLite location has one."""
        if self.kind is not LocationKind.SQLITE:
            raise ValueError(f"{self.shown} is a database, not a file")
        return Path(self.target)


def as_location(location: HistoryLocation | Path | str) -> HistoryLocation:
    """What to open: a HistoryLocation as it is, a Path as a file, a string parsed (once,
    here: the one parser of locations, also for code that opens a store by its URL)."""
    if isinstance(location, HistoryLocation):
        return location
    if isinstance(location, Path):
        return HistoryLocation.file(location)
    return parse_location(location)


def is_url(location: str) -> bool:
    return location.strip().lower().startswith(SCHEMES)


def masked(url: str) -> str:
    """The URL with its password (in the user part or the query) replaced by ***.

    Text before the last `@` of the authority is the user part whatever it
    holds, so a password with unescaped `/` or `@` is masked too.
    """
    match = _URL_LIKE.match(url)
    if not match:
        return url
    scheme, rest = match.group(0), url[match.end():]
    query_at = rest.find("?")
    authority_end = len(rest) if query_at < 0 else query_at
    at = rest.rfind("@", 0, authority_end)
    if at >= 0:
        user, has_password, _ = rest[:at].partition(":")
        rest = user + (":***" if has_password else "") + rest[at:]
    for name in _SECRET_PARAMETERS:
        rest = re.sub(rf"([?&]{name}=)[^&#]*", r"\1***", rest, flags=re.IGNORECASE)
    return scheme + rest


def parse_location(location: str, origin: str | None = None) -> HistoryLocation:
    """A file path or a PostgreSQL URL; StoreError (exit 2) naming `origin` (`--db`,
    `CHATMEM_DB`, the config file's key) and the location, masked, when it cannot be one.
    Given by a person (an `origin`), ":memory:" is refused: SQLite's in-memory database
    keeps nothing past the command, which said nothing of it, and every later command
    called it a missing file. chatmem opens one itself for scratch work (no `origin`)."""
    where = f"{origin}: " if origin else ""
    text = location.strip()
    # A file's name is bytes on POSIX, as the locale decoded them (escaped when they are not
    # its encoding): opened so, they name the file typed. A URL is text.
    if _URL_LIKE.match(text) and not is_valid(location):
        raise StoreError(f"{origin or 'the history location'} must be UTF-8 text; it holds "
                         "bytes that are not")
    shown = masked(text)
    control = _CONTROL.search(location)
    if control:
        # Shown escaped: a newline would break the one line, an escape would be obeyed.
        raise StoreError(f"{where}{_CONTROL.sub(lambda m: code_point(m.group()), shown)}: "
                         "a history location cannot hold a control character "
                         f"({code_point(control.group())})")
    if not _URL_LIKE.match(text):
        if not text:
            raise StoreError(f"{origin or 'the history location'} is empty: give a file path "
                             "or a postgresql:// URL")
        if origin and text == IN_MEMORY:
            raise StoreError(f"{where}{IN_MEMORY} keeps nothing; name a file")
        folder_end = re.search(rf"[/{re.escape(os.sep)}]\.?$", location)
        if folder_end:
            # A path drops its last slash, and a last ".": `--db notes/` (or notes/.) made a
            # history file named notes.
            raise StoreError(f"{where}{location} names a folder (it ends in "
                             f"{folder_end.group()}): name the history file in it, e.g. "
                             f"{location[:folder_end.start() + 1]}chatmem.db")
        return HistoryLocation.file(user_path(location))
    if not is_url(text):
        raise StoreError(f"{where}{shown}: not a history location: use a file path or a "
                         "postgresql:// URL")
    scheme, _, rest = text.partition("://")
    text = f"{scheme.lower()}://{rest}"
    try:
        parts = urlsplit(text)
    except ValueError:
        # The parser's own words may quote the authority, password and all.
        raise StoreError(f"{where}{shown}: not a valid URL: its host part cannot be read "
                         "(an IPv6 address goes in [ ], both of them)") from None
    query = dict(parse_qsl(parts.query))
    database = query.get("dbname", unquote(parts.path.lstrip("/")))
    if not database and "service" not in query:
        raise StoreError(f"{where}{shown}: the URL names no database "
                         "(postgresql://user@host/DATABASE, or ?service=NAME)")
    url = text
    if "sslmode" not in query and not all(_is_local(h) for h in _hosts(parts.netloc, query)):
        url += ("&" if parts.query else ("" if text.endswith("?") else "?")) + "sslmode=require"
    return HistoryLocation(LocationKind.POSTGRESQL, url, masked(url), database)


def password_of(url: str) -> str | None:
    """The password a URL carries, if any: what a driver's message must never show."""
    parts = urlsplit(url)
    password = dict(parse_qsl(parts.query)).get("password") or (
        unquote(parts.password) if parts.password else None)
    return password or None


def _hosts(netloc: str, query: dict[str, str]) -> list[str]:
    """Every host a URL may connect to; a `host` parameter overrides the authority's, and
    libpq connects to a `hostaddr` address instead of the host it stands beside (the host
    names it for authentication only): both count."""
    # `?hostaddr=10.0.0.5` beside localhost went to that machine as if it were this one.
    addresses = [a for a in query.get("hostaddr", "").split(",") if a]
    if "host" in query:
        return [*query["host"].split(","), *addresses]
    hosts = netloc.rpartition("@")[2]
    names = []
    for host in hosts.split(","):
        if host.startswith("["):
            names.append(host[1:].partition("]")[0])
        else:
            names.append(unquote(host.partition(":")[0]))
    return [*names, *addresses]


def _is_local(host: str) -> bool:
    """The machine itself: a loopback name or address (all of 127.0.0.0/8, as the serve
    commands take it), or a Unix socket's folder."""
    if host.lower() in LOCAL_HOSTS or host.startswith("/"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
