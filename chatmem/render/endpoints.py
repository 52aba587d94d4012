"""A client's line without the URL of the server's model endpoints.

A memory update that failed was told to an MCP client with the helper model's URL as the
error named it (`summary is behind (http://ann:***@10.0.0.5:8080/v1 answered 500 …)`): a
user name or host the server's owner keeps to herself, shown to whoever holds a token of
hers (`mcp --http --tokens`). The client is told "the model's server" instead; the owner's
own log (stderr) keeps the URL, which she needs to mend it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from chatmem.config.settings import Settings

UNNAMED = "the model's server"


def without_endpoints(text: str, settings: Settings | None) -> str:
    """`text` with every model endpoint `settings` name (and OPENAI_BASE_URL), as an error
    shows one (masked) or as given, called UNNAMED."""
    from chatmem.config.settings import ENDPOINT_KEYS
    from chatmem.privacy.secrets import redacted_url

    given = [os.environ.get("OPENAI_BASE_URL")]
    if settings is not None:
        for key in ENDPOINT_KEYS:
            table, _, name = key.rpartition(".")
            given.append(getattr(getattr(settings, table) if table else settings, name, None))
    urls = {form for url in given if url
            for form in (url, redacted_url(url), url.rstrip("/"), redacted_url(url).rstrip("/"))}
    # The longest first: a URL that holds another (its path longer) is replaced whole.
    for url in sorted(urls - {""}, key=len, reverse=True):
        text = text.replace(url, UNNAMED)
    # A host the resolver did not know is named on its own, quoted (providers.unreachable).
    for host in {urlsplit(url).hostname for url in given if url} - {None, ""}:
        text = text.replace(repr(host), "(not shown)")
    return text
