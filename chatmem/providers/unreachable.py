"""Why an OpenAI-compatible server could not be reached, in words that say what to check.

"is the server running?" was said for every failure to connect; but a server that runs can
be out of reach through a proxy the environment names, behind a host name that does not
resolve, or on a port that speaks plain HTTP to an https:// base_url. A redirect reaches
another address, where the chat request arrives as a GET.
"""

from __future__ import annotations

import os
import socket
import ssl
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from chatmem.privacy.secrets import redacted_url


def unreachable(where: str, base_url: str, error: BaseException) -> str:
    """The one line for `error` (the client's connection error) on the way to `base_url`,
    shown as `where`. A proxy's own address is never shown (it may hold a password)."""
    parts = urlsplit(base_url)
    proxy = _proxy_variable(parts.scheme.lower(), parts.hostname or "")
    if proxy is not None:
        # Every connection goes to the proxy: a refusal or a name not found is the proxy's.
        return (f"cannot reach {where} through the proxy ${proxy} names: is the proxy"
                " running? (NO_PROXY lists hosts reached directly)")
    cause = _root(error)
    if isinstance(cause, ssl.SSLCertVerificationError):
        return (f"cannot reach {where}: its TLS certificate was not accepted"
                f" ({cause.verify_message or cause.reason})")
    if isinstance(cause, ssl.SSLError):
        return (f"cannot reach {where}: the TLS handshake failed ({cause.reason}); a server"
                " that speaks plain HTTP needs a base_url that starts with http://")
    if isinstance(cause, socket.gaierror):
        return (f"cannot reach {where}: the host name {parts.hostname!r} was not found (DNS):"
                " check base_url")
    return f"cannot reach {where}: is the server running?"


def _root(error: BaseException) -> BaseException:
    """The first exception in `error`'s chain (the socket's or TLS's own)."""
    seen = {id(error)}
    while (next_one := error.__cause__ or error.__context__) is not None \
            and id(next_one) not in seen:
        seen.add(id(next_one))
        error = next_one
    return error


def _proxy_variable(scheme: str, host: str) -> str | None:
    """The environment variable whose proxy a request to `host` goes through, or None."""
    proxies = urllib.request.getproxies_environment()
    if not (proxies.get(scheme) or proxies.get("all")) or \
            urllib.request.proxy_bypass(host):
        return None
    for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"):
        if os.environ.get(name):
            return name
    return None


def redirected(where: str, error: Any) -> str | None:
    """What to say of `error` (an openai.APIStatusError) when its request was redirected and
    arrived elsewhere as other than the POST it was; else None. The client follows a 301,
    302 or 303 as a browser does, turning the POST into a GET: what that address answers
    (405; 404 "check the model name") said nothing of the redirect."""
    response = error.response
    if not response.history or response.request.method == "POST":
        return None
    parts = urlsplit(redacted_url(str(response.request.url)))
    base = parts._replace(path=parts.path.removesuffix("/chat/completions"), query="",
                          fragment="").geturl()
    return (f"{where} redirected the request ({response.history[0].status_code}) to {base},"
            f" where it arrived as a {response.request.method}, not a POST: set base_url to"
            f" {base}")
