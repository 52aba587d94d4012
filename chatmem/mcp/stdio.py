"""`chatmem mcp` over stdio, where every request a client sends gets an answer, and a
client that has gone leaves no server behind.

JSON can spell a lone surrogate ("\\ud800", half of a pair, or bytes a client decoded
with surrogateescape). The SDK's stdio reader refuses such a line and drops it without a
word, so the client waits forever for an answer. Each line therefore passes through a
relay first that reads it as Python's json does (which keeps a lone surrogate) and writes
every one as U+FFFD, as chatmem stores text from anywhere else; the SDK then reads, and
answers, the mended line.

The SDK stops when stdin ends, but only after the calls in flight return: a replay of a
long conversation, or summaries queued behind each other, ran on for minutes for a client
that had closed its window. The relay also watches stdout: once nobody reads it, no answer
can ever arrive, so the server is given a moment to stop by itself, then abandoned.

Until then, the end of stdin reaches the SDK only once every request read before it is
answered (AnswersOwed): the SDK cancels the calls still running or waiting when it sees
the end, and a client that wrote its record_turn lines and closed stdin, as a shell pipe
does, lost the ones still waiting for their conversation (nothing stored) and heard no
answer to any.

A line the SDK cannot read as one JSON-RPC message it drops without a word, and the client
waits forever: it is answered here as JSON-RPC says, a parse error for what is not JSON
and an invalid request for the rest. A batch (an array of messages) is one of the rest:
MCP took batches out in 2025-06-18, the SDK's own HTTP transport refuses them, and its
client never sends one, so a client asking for 2025-03-26, the one version with batches, is
offered 2024-11-05 (which every client of 2025-03-26 speaks, and which serves chatmem's
tools the same) rather than told it may send what will be refused.
A request whose id is no string and no integer is answered too (chatmem.mcp.odd_ids).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import select
import threading
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from chatmem.mcp.odd_ids import ID_REFUSED, MARK, ODD_ID, refused_id
from chatmem.text import is_valid, valid_text

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.shared._stream_protocols import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A surrogate written as a JSON escape: a line without one needs no mending."""

STOPPING_GRACE = 3.0
"""Seconds a server whose client has gone gets to stop by itself (an idle one closes its
conversations well within it) before what it still runs is abandoned."""

BATCHES_VERSION = "2025-03-26"
"""The one MCP protocol version that allows JSON-RPC batches."""
OFFERED_INSTEAD = "2024-11-05"
"""What a client asking BATCHES_VERSION is offered: the version before, without batches."""
BATCH_REFUSED = ("Invalid Request: a batch is not taken (MCP has none since 2025-06-18); "
                 "send each message on its own")

_HUNG_UP = select.POLLERR | select.POLLHUP | select.POLLNVAL
_READ = 65536


def run_stdio(server: MCPServer[Any], abandon: Callable[[], None]) -> None:
    """Serve `server` over this process's stdin and stdout until stdin ends; when nobody
    reads stdout any more and the server has not stopped within STOPPING_GRACE, call
    `abandon` (from another thread), which is to end the process without waiting for the
    calls in flight."""
    wire, restored = os.dup(0), os.dup(0)
    answers = os.dup(1)  # the SDK moves fd 1 aside while it serves; this is the client's
    relayed, relay_end = os.pipe()
    # The SDK reads fd 0 (and moves it aside while it serves): it reads the relay's side.
    os.dup2(relayed, 0)
    os.close(relayed)
    stopped = threading.Event()
    threading.Thread(target=_relay, args=(wire, relay_end, answers, stopped, abandon),
                     name="chatmem-mcp-stdin", daemon=True).start()
    try:
        server.run("stdio")
    finally:
        stopped.set()
        os.dup2(restored, 0)
        os.close(restored)


def _relay(source: int, sink: int, answers: int, stopped: threading.Event,
           abandon: Callable[[], None]) -> None:
    """Copy `source` to `sink` a line at a time, each mended, until `source` ends or
    nobody reads `answers`; closing `sink` is how the SDK learns the client has gone."""
    watch = select.poll()
    watch.register(source, select.POLLIN)
    watch.register(answers, 0)  # only a hang-up is reported
    pending = Lines()
    reading = True
    while True:
        ready = dict(watch.poll())
        if ready.get(answers, 0) & _HUNG_UP:
            break
        if not reading or not ready.get(source):
            continue
        chunk = _read(source)
        if not chunk:
            reading = _finish_relay(sink, pending.rest())
            watch.unregister(source)  # the client may still read the answers in flight
            continue
        lines = pending.feed(chunk)
        if lines and not _write(sink, b"".join(mended(line) for line in lines)):
            reading = _finish_relay(sink, b"")
            watch.unregister(source)
    if reading:
        _finish_relay(sink, b"")
    if not stopped.wait(STOPPING_GRACE):
        abandon()


MOST_LINE_BYTES = 16 * 2**20
"""The longest line read as a message (serve's and `mcp --http`'s bound on a body, 16 MiB):
a longer one is dropped as it comes and answered as an invalid request (TOO_LONG). A line
was held whole however long: one that never ended (`yes | tr -d '\\n'` piped in) grew
the server's memory until the machine ran out."""
TOO_LONG_MARK = "chatmem-line-too-long"
"""The one member of the line handed to the SDK in place of one over MOST_LINE_BYTES (its
size, as far as read): the SDK cannot read it, and its refusal is answered with TOO_LONG."""
TOO_LONG = ("Invalid Request: a line of {size:,} bytes; at most {most:,} are read as one "
            "message (nothing of it was done)")


class Lines:
    """Whole lines out of chunks as they are read. A line longer than a chunk is kept as
    its pieces and joined once its newline comes: gluing each chunk to all before it and
    splitting the lot again made a 30 MB line cost 67 s (its work grew with its square).
    A line past `most` bytes is not kept: its bytes are counted and dropped, and the line
    handed on in its place names its size (TOO_LONG_MARK)."""

    def __init__(self, most: int = MOST_LINE_BYTES) -> None:
        self._pieces: list[bytes] = []
        self._held = 0
        self._dropped = 0
        """Bytes of the line under way dropped so far: past `most` (0: none)."""
        self._most = most

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines `chunk` completes, each with its newline."""
        end = chunk.rfind(b"\n") + 1
        if not end:
            self._hold(chunk)
            return []
        first = chunk.find(b"\n") + 1
        lines = [] if self._dropped else [
            b"".join([*self._pieces, chunk[:first]]) if self._pieces else chunk[:first]]
        lines += [line + b"\n" for line in chunk[first:end - 1].split(b"\n")] if end > first else []
        kept = [line if len(line) <= self._most + 1 else self._too_long(len(line) - 1) + b"\n"
                for line in lines]
        if self._dropped:
            kept.insert(0, self._too_long(self._dropped + first - 1) + b"\n")
        self._pieces, self._held, self._dropped = [], 0, 0
        if end < len(chunk):
            self._hold(chunk[end:])
        return kept

    def rest(self) -> bytes:
        """What came after the last newline."""
        if self._dropped:
            return self._too_long(self._dropped)
        return b"".join(self._pieces)

    def _hold(self, piece: bytes) -> None:
        if self._dropped:
            self._dropped += len(piece)
            return
        self._pieces.append(piece)
        self._held += len(piece)
        if self._held > self._most:
            self._dropped, self._pieces, self._held = self._held, [], 0

    @staticmethod
    def _too_long(size: int) -> bytes:
        return json.dumps({TOO_LONG_MARK: size}).encode()


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, _READ)
    except OSError:
        return b""


def _write(fd: int, data: bytes) -> bool:
    """Whether all of `data` went in (not: the server stopped reading, it is shutting down)."""
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        return False
    return True


def _finish_relay(sink: int, last: bytes) -> bool:
    """Hand on a last line without its newline, then close `sink`; returns False (no
    longer reading) for the relay's loop."""
    if last:
        _write(sink, mended(last))
    os.close(sink)
    return False


def mended(line: bytes) -> bytes:
    """`line` with every lone surrogate its JSON spells written as U+FFFD, and a request
    with an odd id (chatmem.mcp.odd_ids) as a line the SDK refuses and unread_line answers;
    any other line (whatever it holds, valid JSON or not) exactly as it came."""
    surrogates = _SURROGATE_ESCAPE.search(line)
    if not surrogates and not ODD_ID.search(line):
        return line
    try:
        message = json.loads(line)
    except ValueError:
        return line
    ending = line[len(line.rstrip(b"\r\n")):]
    odd = refused_id(message)
    if odd is not None:
        return json.dumps({MARK: odd}).encode("utf-8") + ending
    if not surrogates:
        return line
    if _all_valid(message):
        return line  # only whole pairs, which the SDK reads itself
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


class AnswersOwed:
    """The requests read from a client over stdio and not answered yet, by id, with the two
    streams the SDK serves them over (`reading`, `writing`). A request the client cancels
    is never answered, so it is owed no longer. What is owed when stdin ends is bounded:
    the calls waiting for a conversation are few (chatmem.mcp.memory.QUEUED and the rest),
    and a client that stops reading is left by the relay's watch (run_stdio)."""

    def __init__(self) -> None:
        self._owed: Counter[Any] = Counter()
        self._paid = anyio.Event()
        self._paid.set()

    def reading(self, stream: ReadStream[SessionMessage | Exception],
                answers: WriteStream[SessionMessage]) -> ReadStream[SessionMessage | Exception]:
        """`stream` (the client's requests), its end held back until nothing is owed, and
        each line it could not read answered on `answers` (unread_line)."""
        return _Reading(stream, self, answers)

    def writing(self, stream: WriteStream[SessionMessage]) -> WriteStream[SessionMessage]:
        """`stream` (the server's answers), each answer paying what it answers."""
        return _Writing(stream, self)

    def read(self, item: SessionMessage | Exception) -> None:
        from mcp.shared.dispatcher import coerce_request_id
        from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
        from mcp.types import JSONRPCNotification, JSONRPCRequest

        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCRequest):
            self._owed[coerce_request_id(message.id)] += 1
            self._paid = anyio.Event()
        elif (isinstance(message, JSONRPCNotification)
              and message.method == "notifications/cancelled"):
            cancelled = cancelled_request_id_from_params(message.params)
            if cancelled is not None:
                self._pay(coerce_request_id(cancelled))

    def answered(self, item: SessionMessage) -> None:
        from mcp.shared.dispatcher import coerce_request_id
        from mcp.types import JSONRPCError, JSONRPCResponse

        message = item.message
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self._pay(coerce_request_id(message.id))

    def _pay(self, request_id: Any) -> None:
        if self._owed[request_id] > 0:
            self._owed[request_id] -= 1
        if self._owed[request_id] <= 0:
            del self._owed[request_id]
        if not self._owed:
            self._paid.set()

    async def all_paid(self) -> None:
        await self._paid.wait()


class _Reading:
    """A read stream whose end comes once its AnswersOwed owes nothing."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception],
                 owed: AnswersOwed, answers: WriteStream[SessionMessage]) -> None:
        self._inner, self._owed, self._answers = inner, owed, answers

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item, which the SDK looks for (duck-typed)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            try:
                item = await self._inner.receive()
            except anyio.EndOfStream:
                await self._owed.all_paid()
                raise
            if not isinstance(item, Exception):
                break
            await self._answers.send(unread_line(item))
        self._owed.read(item)
        return without_batches(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Reading:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Reading:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()


class _Writing:
    """A write stream that tells its AnswersOwed of each answer sent."""

    def __init__(self, inner: WriteStream[SessionMessage], owed: AnswersOwed) -> None:
        self._inner, self._owed = inner, owed

    async def send(self, item: SessionMessage, /) -> None:
        try:
            await self._inner.send(item)
        finally:
            self._owed.answered(item)  # sent, or never to be: owed no longer

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Writing:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()


def unread_line(error: Exception) -> SessionMessage:
    """The answer to a line the SDK could not read (`error`, its ValidationError): a parse
    error where it was no JSON, else an invalid request, with the line's id where it has
    one (JSON-RPC's null where it has none, as for a batch)."""
    from mcp.shared.message import SessionMessage
    from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
    from pydantic import ValidationError

    details = error.errors() if isinstance(error, ValidationError) else []
    given = _whole_line(details)
    if any(detail["type"] == "json_invalid" for detail in details):
        answer = ErrorData(code=PARSE_ERROR, message="Parse error: this line is not JSON")
    elif isinstance(given, list):
        answer = ErrorData(code=INVALID_REQUEST, message=BATCH_REFUSED)
    elif isinstance(given, dict) and isinstance(given.get(MARK), str):
        answer = ErrorData(code=INVALID_REQUEST, message=ID_REFUSED.format(id=given[MARK]))
    elif isinstance(given, dict) and isinstance(given.get(TOO_LONG_MARK), int):
        answer = ErrorData(code=INVALID_REQUEST, message=TOO_LONG.format(
            size=given[TOO_LONG_MARK], most=MOST_LINE_BYTES))
    else:
        answer = ErrorData(code=INVALID_REQUEST,
                           message="Invalid Request: this line is no JSON-RPC 2.0 message")
    line_id = given.get("id") if isinstance(given, dict) else None
    if isinstance(line_id, bool) or not isinstance(line_id, int | str):
        line_id = None
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=line_id, error=answer))


def _whole_line(details: list[Any]) -> Any:
    """The line a ValidationError's `details` are about, as JSON read it: the input of an
    error about the line itself (a batch, a string), else of a field missing from the line
    (a response's `result`). The first error's input is that of whatever failed first: a
    request's list of `params` was refused as a batch, and the id of one whose `jsonrpc`
    was "1.0" was not given back, the error's input being that "1.0"."""
    for detail in details:
        if len(detail.get("loc", ())) <= 1:
            return detail.get("input")
    return next((detail.get("input") for detail in details
                 if detail.get("type") == "missing" and len(detail.get("loc", ())) == 2
                 and isinstance(detail.get("input"), dict)), None)


def without_batches(item: SessionMessage) -> SessionMessage:
    """`item`, but an initialize asking for BATCHES_VERSION asks for OFFERED_INSTEAD."""
    from mcp.types import JSONRPCRequest

    message = item.message
    if not (isinstance(message, JSONRPCRequest) and message.method == "initialize"
            and isinstance(message.params, dict)
            and message.params.get("protocolVersion") == BATCHES_VERSION):
        return item
    asked = message.model_copy(update={
        "params": {**message.params, "protocolVersion": OFFERED_INSTEAD}})
    return dataclasses.replace(item, message=asked)
