"""`chatmem mcp` over stdio, where every request a client sends gets an answer.

JSON can spell a lone surrogate ("\\ud800", half of a pair, or bytes a client decoded
with surrogateescape). The SDK's stdio reader refuses such a line and drops it without a
word, so the client waits forever for an answer. Each line therefore passes through a
relay first that reads it as Python's json does (which keeps a lone surrogate) and writes
every one as U+FFFD, as chatmem stores text from anywhere else; the SDK then reads, and
answers, the mended line.
"""

from __future__ import annotations

import json
import os
import re
import threading
from typing import TYPE_CHECKING, Any, BinaryIO

from chatmem.text import is_valid, valid_text

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A surrogate written as a JSON escape: a line without one needs no mending."""


def run_stdio(server: MCPServer[Any]) -> None:
    """Serve `server` over this process's stdin and stdout until stdin ends."""
    wire, restored = os.dup(0), os.dup(0)
    relayed, relay_end = os.pipe()
    # The SDK reads fd 0 (and moves it aside while it serves): it reads the relay's side.
    os.dup2(relayed, 0)
    os.close(relayed)
    threading.Thread(target=_relay, args=(os.fdopen(wire, "rb"), os.fdopen(relay_end, "wb")),
                     name="chatmem-mcp-stdin", daemon=True).start()
    try:
        server.run("stdio")
    finally:
        os.dup2(restored, 0)
        os.close(restored)


def _relay(source: BinaryIO, sink: BinaryIO) -> None:
    """Copy `source` to `sink` a line at a time, each mended; closing `sink` at the end is
    how the SDK learns the client has gone."""
    with source, sink:
        for line in source:
            try:
                sink.write(mended(line))
                sink.flush()
            except BrokenPipeError:  # the server stopped reading: it is shutting down
                return


def mended(line: bytes) -> bytes:
    """`line` with every lone surrogate its JSON spells written as U+FFFD; any other line
    (whatever it holds, valid JSON or not) exactly as it came."""
    if not _SURROGATE_ESCAPE.search(line):
        return line
    try:
        message = json.loads(line)
    except ValueError:
        return line
    if _all_valid(message):
        return line  # only whole pairs, which the SDK reads itself
    ending = line[len(line.rstrip(b"\r\n")):]
    return json.dumps(_valid(message), ensure_ascii=False).encode("utf-8") + ending


def _all_valid(value: Any) -> bool:
    if isinstance(value, str):
        return is_valid(value)
    if isinstance(value, dict):
        return all(_all_valid(k) and _all_valid(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_all_valid(item) for item in value)
    return True


def _valid(value: Any) -> Any:
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_text(k): _valid(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_valid(item) for item in value]
    return value
