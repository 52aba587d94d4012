"""The lines a client writes to `chatmem mcp` over stdio, cut out of the chunks read from
its pipe (chatmem.mcp.stdio relays them to the SDK), each at most MAX_LINE_BYTES.

The relay held a line whole until its newline came, so a client, or whatever writes to its
pipe, could make the server hold gigabytes for one line (a 256 MiB ping took it from 83 MB
to 1.6 GB, six times the line, as the SDK parsed it). A longer line is dropped as it comes,
keeping only its head, and handed on as a line the SDK refuses, answered as an invalid
request (with the line's id when its head shows one); the lines after it are read as ever.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

MAX_LINE_BYTES = 4 * 2**20
"""The longest line read (its newline not counted): the SDK's HTTP transport refuses a
body over 4 MiB (mcp.server.transport_security.DEFAULT_MAX_REQUEST_BODY_SIZE), so a client
whose calls fit over HTTP fits here too."""
LONG_MARK = "chatmem-line-too-long"
"""The member of the line handed to the SDK in place of one over MAX_LINE_BYTES: the SDK
cannot read that line, and its refusal is answered with LINE_REFUSED (unread_line)."""
LINE_REFUSED = (f"Invalid Request: a line over {MAX_LINE_BYTES // 2**20} MiB is not read "
                "(as MCP over HTTP takes no larger body); send less in one message")
_HEAD_BYTES = 4096
"""How much of an over-long line is kept to find its id."""
_HEAD_ID = re.compile(
    rb'\s*\{\s*(?:"(?:jsonrpc|method)"\s*:\s*"[^"\\]*"\s*,\s*)*"id"\s*:\s*'
    rb'(-?[0-9]{1,18}(?=[\s,}])|"[^"\\]{0,200}")')
"""The id of a message whose members before it are only "jsonrpc" and "method" (as every
client library writes a request): an "id" further on may be one inside its params."""


class Lines:
    """Whole lines out of chunks as they are read. A line longer than a chunk is kept as
    its pieces and joined once its newline comes: gluing each chunk to all before it and
    splitting the lot again made a 30 MB line cost 67 s (its work grew with its square).
    A line over `most` bytes is not kept: its head is, and it comes out as too_long_line."""

    def __init__(self, most: int = MAX_LINE_BYTES) -> None:
        self._most = most
        self._pieces: list[bytes] = []
        self._size = 0
        self._dropping: bytes | None = None  # the head of an over-long line being dropped

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines `chunk` completes, each with its newline."""
        end = chunk.rfind(b"\n") + 1
        if not end:
            self._keep(chunk)
            return []
        lines: list[bytes] = []
        if self._dropping is not None:
            lines.append(too_long_line(self._dropping) + b"\n")
            self._dropping = None
            whole = chunk[chunk.find(b"\n") + 1:end]
        else:
            whole = b"".join([*self._pieces, chunk[:end]]) if self._pieces else chunk[:end]
        self._pieces, self._size = [], 0
        if end < len(chunk):
            self._keep(chunk[end:])
        lines += [line + b"\n" if len(line) <= self._most else too_long_line(line) + b"\n"
                  for line in whole[:-1].split(b"\n")] if whole else []
        return lines

    def rest(self) -> bytes:
        """What came after the last newline."""
        if self._dropping is not None:
            return too_long_line(self._dropping)
        return b"".join(self._pieces)

    def _keep(self, piece: bytes) -> None:
        if self._dropping is not None:
            return
        self._pieces.append(piece)
        self._size += len(piece)
        if self._size > self._most:
            self._dropping = b"".join(self._pieces)[:_HEAD_BYTES]
            self._pieces, self._size = [], 0


def too_long_line(head: bytes) -> bytes:
    """The line handed to the SDK in place of one over MAX_LINE_BYTES that starts with
    `head`: one the SDK refuses, with the dropped line's id when its head shows one."""
    found = _HEAD_ID.match(head[:_HEAD_BYTES])
    line_id: Any = None
    if found:
        with contextlib.suppress(ValueError):
            line_id = json.loads(found.group(1))
    return json.dumps({LONG_MARK: True, "id": line_id}).encode("utf-8")
