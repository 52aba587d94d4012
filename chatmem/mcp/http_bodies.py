"""`chatmem mcp --http` answers batches and offers protocol versions as over stdio
(chatmem.mcp.stdio): the SDK agreed to 2025-03-26, whose JSON-RPC allows batches, then
answered a batch with a 400 holding pydantic's multi-line dump of four union members, as
"invalid params" (-32602). A batch is refused as an invalid request in one line, and a
client asking for 2025-03-26 is offered 2024-11-05. A request without a session id that the
SDK refuses (anything but an initialize) is answered without the session id it made for it:
that session is gone with the refusal, and a client that kept the id was told "Session not
found" on its next call. A request whose id is no string and no integer (null, true, 1.5),
which the SDK took as a notification (202, no answer), is refused as over stdio: a 400 with
an invalid request error, id null. A body over MAX_LINE_BYTES (the SDK's own limit, which it
checks only once this wrapper has read the body whole) is refused with a 413 as it comes:
a 200 MiB body was read whole first, growing the server by 400 MB, and 2 GiB by gigabytes."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

from chatmem.mcp.odd_ids import ID_REFUSED, odd_id_of
from chatmem.mcp.stdio import BATCH_REFUSED, BATCHES_VERSION, OFFERED_INSTEAD
from chatmem.mcp.stdio_lines import MAX_LINE_BYTES
from chatmem.serve.asgi import App, Receive, Scope, Send

Message = MutableMapping[str, Any]
SESSION_HEADER = b"mcp-session-id"
BODY_REFUSED = (f"Invalid Request: a body over {MAX_LINE_BYTES // 2**20} MiB is not read; "
                "send less in one message")


class OneMessageBodies:
    """An ASGI app around the SDK's streamable HTTP app: each POST body is read whole (as
    the SDK reads it; the server's guard has bounded it), then a batch is refused and an
    initialize asking for BATCHES_VERSION asks for OFFERED_INSTEAD; any other body goes on
    exactly as it came."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not any(
                name.lower() == SESSION_HEADER for name, _ in scope.get("headers", ())):
            send = _no_session_refused(send)
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        if _declared_size(scope) > MAX_LINE_BYTES:
            await _refuse(send, BODY_REFUSED, status=413)
            return
        pieces: list[bytes] = []
        size = 0
        ended = False
        while not ended:
            message = await receive()
            if message["type"] != "http.request":  # gone before its body came
                await self.app(scope, _replayed(b"".join(pieces), message, receive), send)
                return
            pieces.append(message.get("body", b""))
            size += len(pieces[-1])
            if size > MAX_LINE_BYTES:
                await _refuse(send, BODY_REFUSED, status=413)
                return
            ended = not message.get("more_body", False)
        body = b"".join(pieces)
        if _batch(body):
            await _refuse(send, BATCH_REFUSED)
            return
        odd = odd_id_of(body)
        if odd is not None:
            await _refuse(send, ID_REFUSED.format(id=odd))
            return
        await self.app(scope, _replayed(offered(body), None, receive), send)


def _no_session_refused(send: Send) -> Send:
    """`send` for a request that opens a session, without the session id of a refusal (a
    status of 400 or more): the SDK discarded that session as it refused the request."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and message.get("status", 200) >= 400:
            message = {**message, "headers": [
                (name, value) for name, value in message.get("headers", ())
                if bytes(name).lower() != SESSION_HEADER]}
        await send(message)

    return sending


def offered(body: bytes) -> bytes:
    """`body`, but an initialize asking for BATCHES_VERSION asks for OFFERED_INSTEAD."""
    if BATCHES_VERSION.encode() not in body:  # most bodies: no second parse
        return body
    try:
        request = json.loads(body)
    except ValueError:
        return body
    if not isinstance(request, dict) or request.get("method") != "initialize":
        return body
    params = request.get("params")
    if not isinstance(params, dict) or params.get("protocolVersion") != BATCHES_VERSION:
        return body
    asked = {**request, "params": {**params, "protocolVersion": OFFERED_INSTEAD}}
    return json.dumps(asked, ensure_ascii=False).encode("utf-8")


def _batch(body: bytes) -> bool:
    """Whether `body` is a JSON array (one that is no JSON the SDK answers as a parse error)."""
    if body.lstrip()[:1] != b"[":
        return False
    try:
        return isinstance(json.loads(body), list)
    except ValueError:
        return False


def _replayed(body: bytes, then: Message | None, receive: Receive) -> Receive:
    """A `receive` that gives `body` whole, then `then` (a disconnect already read), then
    what the client sends (its disconnect)."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    if then is not None:
        pending.append(then)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


def _declared_size(scope: Scope) -> int:
    """The body's size as its Content-Length says (0 where it says none, or nothing a
    number: the bytes are counted as they come)."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length" and value.strip().isdigit():
            return int(value)
    return 0


async def _refuse(send: Send, why: str, status: int = 400) -> None:
    """A `status` (400) holding an invalid request error (-32600) saying `why`, id null."""
    answer = json.dumps({"jsonrpc": "2.0", "id": None,
                         "error": {"code": -32600, "message": why}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(answer)).encode())]})
    await send({"type": "http.response.body", "body": answer})
