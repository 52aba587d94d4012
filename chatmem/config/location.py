"""Where a history lives: a SQLite file, or a PostgreSQL database named by a URL.

`--db`, CHATMEM_DB and the config's `db` all give one string; a `postgresql://`
or `postgres://` one is a server, anything else a file path. A URL's password
is never shown: every message names the database by `masked(url)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import parse_qsl, unquote, urlsplit

from chatmem.errors import StoreError

SCHEMES = ("postgresql://", "postgres://")
LOCAL_HOSTS = frozenset({"", "localhost", "127.0.0.1", "::1", "[::1]"})
_SECRET_PARAMETERS = ("password", "sslpassword")
_URL_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class LocationKind(StrEnum):
    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"


@dataclass(frozen=True)
class HistoryLocation:
    kind: LocationKind
    target: str
    """The file path, or the URL to connect with (sslmode added where the TLS rule asks)."""
    shown: str
    """What messages name: the path, or the URL with its password masked."""


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


def parse_location(location: str) -> HistoryLocation:
    """A file path or a PostgreSQL URL; raises StoreError naming a URL it cannot use (masked)."""
    text = location.strip()
    if not _URL_LIKE.match(text):
        return HistoryLocation(LocationKind.SQLITE, location, location)
    shown = masked(text)
    if not is_url(text):
        raise StoreError(f"{shown}: not a history location: use a file path or a "
                         "postgresql:// URL")
    parts = urlsplit(text)
    database = unquote(parts.path.lstrip("/"))
    query = dict(parse_qsl(parts.query))
    database = query.get("dbname", database)
    if not database:
        raise StoreError(f"{shown}: the URL names no database (postgresql://user@host/DATABASE)")
    url = text
    if "sslmode" not in query and not all(_is_local(h) for h in _hosts(parts.netloc, query)):
        url += ("&" if parts.query else ("" if text.endswith("?") else "?")) + "sslmode=require"
    return HistoryLocation(LocationKind.POSTGRESQL, url, masked(url))


def password_of(url: str) -> str | None:
    """The password a URL carries, if any: what a driver's message must never show."""
    parts = urlsplit(url)
    password = dict(parse_qsl(parts.query)).get("password") or (
        unquote(parts.password) if parts.password else None)
    return password or None


def _hosts(netloc: str, query: dict[str, str]) -> list[str]:
    """Every host a URL may connect to; a `host` parameter overrides the authority's."""
    if "host" in query:
        return query["host"].split(",")
    hosts = netloc.rpartition("@")[2]
    names = []
    for host in hosts.split(","):
        if host.startswith("["):
            names.append(host[1:].partition("]")[0])
        else:
            names.append(unquote(host.partition(":")[0]))
    return names


def _is_local(host: str) -> bool:
    """The machine itself: a loopback name or address, or a Unix socket's folder."""
    return host.lower() in LOCAL_HOSTS or host.startswith("/")
