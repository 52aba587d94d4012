"""What the guards in front of an HTTP front end share: the ASGI shapes they pass on, the
OpenAI-shaped refusal they answer with before the app, and how a refusal names the request
in the owner's log."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


async def refuse(send: Send, status: int, message: str, code: str,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """An OpenAI-shaped error answered before the app (the guards' refusals)."""
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                 "param": None, "code": code}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


def refused_line(scope: Scope, because: str) -> str:
    """One line of the owner's log for a request refused before the app (the values in
    `because` quoted by the caller, so a control character a page sent cannot reach the
    terminal raw)."""
    client = scope.get("client")
    came = f"{client[0]}:{client[1]}" if client else "an unknown address"
    return f"refused {scope.get('method', '')} {scope.get('path', '')} from {came}: {because}"
