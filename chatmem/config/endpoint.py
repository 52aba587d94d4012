"""An OpenAI-compatible server's base URL, parsed once into what requests are built from.

A base URL may carry a query (`?api-version=2024-06-01`, or `?api-key=KEY` for a
gateway that takes the key there). The client appends each request's path to the
base URL as text, so `…/v1?api-key=KEY` would become `…/v1/?api-key=KEYchat/completions`:
the query is taken off here and sent as the query of every request instead
(`…/v1/chat/completions?api-key=KEY`). Messages show the URL with its
credentials masked (`privacy.secrets.redacted_url`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from chatmem.errors import ConfigError
from chatmem.privacy.secrets import redacted_url
from chatmem.text import CONTROLS, code_point, is_valid

_HOST = re.compile(r"[\w.-]+|[0-9a-f:.]+")
"""A host name (letters of any script, digits, dots, hyphens) or an IPv6 address (the
parser has taken its brackets off and checked it)."""


@dataclass(frozen=True)
class Endpoint:
    # base and query may hold a key (user:KEY@host, ?api-key=KEY): a repr shows only `shown`.
    base: str = field(repr=False)
    """scheme://host[:port]/path, without the query: what the client appends paths to."""
    query: dict[str, str] = field(default_factory=dict, repr=False)
    """The base URL's query, sent with every request."""
    shown: str = ""
    """The URL as messages show it: a key in it masked."""


def parse_endpoint(url: str, origin: str | None = None) -> Endpoint:
    """`url` as an Endpoint; ConfigError naming `origin` (`CHATMEM_BASE_URL`, `FILE: key
    'base_url'`) and the URL, masked, when it is no http(s) URL of a host."""
    where = origin or "base_url"
    if not is_valid(url):
        raise ConfigError(f"{where} must be UTF-8 text; it holds bytes that are not")
    control = CONTROLS.search(url) or re.search(r"\s", url.strip())
    if control:
        raise ConfigError(f"{where}: a URL cannot hold {code_point(control.group())} "
                          "(a control character or a space)")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        # The parser's own words may quote the URL's credentials.
        raise ConfigError(f"{where}: not a valid URL (its host or port cannot be read; an "
                          "IPv6 address goes in [ ], both of them)") from None
    shown = redacted_url(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{where}: {shown if parts.netloc else _opening(url)}: not an "
                          "http:// or https:// URL (e.g. http://127.0.0.1:11434/v1)")
    if not _HOST.fullmatch(parts.hostname or "") or port == 0:
        raise ConfigError(f"{where}: {shown}: not a valid URL (its host or port cannot be "
                          "read)")
    base = urlunsplit((parts.scheme.lower(), parts.netloc, parts.path, "", ""))
    return Endpoint(base, dict(parse_qsl(parts.query, keep_blank_values=True)), shown)


def _opening(url: str) -> str:
    """The first characters of a base URL whose host could not be read, for a message: with
    no `//` nothing in it reads as a password to mask, and what it holds may be the key
    itself (`OPENAI_BASE_URL=sk-…`, the variables swapped) or one after a user name
    (`ann:KEY@host/v1`, `https:ann:KEY@host/v1`, the `//` left out)."""
    url = url.strip()
    return f"{url[:_OPENING]}… ({len(url)} characters)" if len(url) > _OPENING else url


_OPENING = 5
"""Enough to tell `local`host from `sk-pr`oj, never enough of a key to use."""
