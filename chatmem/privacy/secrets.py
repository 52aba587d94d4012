"""Secrets kept out of what chatmem prints and stores.

People paste API keys into base URLs (`https://user:KEY@host/v1`,
`?api-key=KEY`); errors, `config show` and stored turns show the URL with
those parts replaced by ***.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit, urlunsplit


def url_secrets(url: str) -> list[str]:
    """The password and query values of a URL: where people paste a key."""
    parts = urlsplit(url)
    found = [parts.password] if parts.password else [parts.username] if parts.username else []
    return found + [value for _, value in parse_qsl(parts.query) if value]


def redacted_url(url: str) -> str:
    """`url` with a password and query values replaced by ***: safe to print and store."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the configured base_url"
    netloc = parts.netloc
    if parts.password:
        netloc = netloc.replace(f":{parts.password}@", ":***@")
    elif parts.username and "@" in netloc:
        # A key pasted as the user name: user@host.
        netloc = "***@" + netloc.split("@", 1)[1]
    query = "&".join(f"{pair.split('=', 1)[0]}=***" if "=" in pair else pair
                     for pair in parts.query.split("&")) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
