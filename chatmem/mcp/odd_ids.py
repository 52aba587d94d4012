"""Requests whose id is no string and no integer (null, true, 1.5, an object, an array).

The SDK read such a request as a notification, which is never answered (over HTTP: 202 and
no body), so its client waited forever. JSON-RPC 2.0 answers every message that has an id,
and MCP takes only strings and integers: such a request is answered as an invalid request,
with id null (JSON-RPC's id of a request whose own could not be used), and nothing of it is
done. chatmem.mcp.stdio and chatmem.mcp.http_bodies answer it, each over its transport. A
notification written with id null (JSON-RPC 1.0's way, which some clients keep) is no
request: it is taken as the notification it is, as the SDK always took it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from chatmem.text import valid_text

ID_REFUSED = ("Invalid Request: a request's id must be a string or an integer (MCP takes no "
              "null, boolean, fraction, object or array); this one was {id}")

ODD_ID = re.compile(rb'"id"\s*:\s*(?:[^\s"0-9-]|-?[0-9]+[.eE])')
"""An "id" member that may be no string and no integer: a line without one (nearly every
line) need not be read to know its id is not odd."""

MARK = "chatmem-refused-id"
"""The one member of the line handed to the SDK over stdio in place of a request with an odd
id (its id as shown): the SDK cannot read that line, and its refusal is answered with
ID_REFUSED (chatmem.mcp.stdio.unread_line)."""


def odd_id_of(body: bytes) -> str | None:
    """The id of `body` (one JSON-RPC message) as ID_REFUSED shows it, when it is a request
    whose id is no string and no integer; None for any other body (JSON or not)."""
    if not ODD_ID.search(body):
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return refused_id(message)


def refused_id(message: Any) -> str | None:
    """The id of `message` (a JSON value) as shown, when it is a request (it names a method)
    whose id is there but neither a string nor an integer; else None."""
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    given = message["id"]
    if not isinstance(given, bool) and isinstance(given, int | str):
        return None
    if given is None and str(message["method"]).startswith("notifications/"):
        return None  # JSON-RPC 1.0's way to write a notification: done as one, as ever
    shown = valid_text(json.dumps(given, ensure_ascii=False))
    return shown if len(shown) <= 40 else shown[:39] + "…"
