"""A client that stops reading mid-answer (its receive window full) no longer holds serve's
connection, its place among the requests under way and the reply's worker for ever (or
`mcp --http`'s: the same server_config runs it): once it takes no byte of the answer for the
send deadline, its connection is closed as one that hangs up is, and its turn stored as
such; a client reading slowly is never cut. Real uvicorn on 127.0.0.1, a real model server
streaming a long reply, clients with a small receive buffer so that the answer fills the
kernel's buffers; the deadline made short through the public Limits."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from chat_server import ChatServer
from test_proxy import RunningProxy, statuses
from waiting import HANG, wait_until

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx

from chatmem.config.settings import Settings
from chatmem.serve.connections import ConnectionGuard, Limits

PIECE = "长文" * 175_000
"""The model's first piece: 1 MB of UTF-8 as serve streams it, many times what a small
receive buffer and the kernel's unsent share hold."""


@pytest.fixture
def settings(chat_server: ChatServer, db_path: Path) -> Settings:
    chat_server.piece = PIECE
    return Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                    db=str(db_path))


def request(conversation: str, stream: bool = True) -> bytes:
    """A chat request for a long reply (the connection closed after the answer)."""
    body = json.dumps({"model": "test-small", "stream": stream, "max_tokens": 1_000_000,
                       "messages": [{"role": "user", "content": "写一篇很长的文章"}]},
                      ensure_ascii=False).encode()
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close"
            b"\r\nContent-Type: application/json\r\nX-Chatmem-Conversation: "
            + quote(conversation).encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body)
            + body)


def asking(proxy: RunningProxy, conversation: str, stream: bool = True) -> socket.socket:
    """A connection with a small receive buffer, its chat request sent."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window
    sock.connect(("127.0.0.1", proxy.port))
    sock.sendall(request(conversation, stream))
    return sock


SLOW_READER = """
import socket, sys, time
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
sock.connect(("127.0.0.1", int(sys.argv[1])))
sock.sendall(sys.stdin.buffer.read())
said = b""
while chunk := sock.recv(2048):  # until the server closes it, the answer sent
    said += chunk
    time.sleep(0.01)
sys.stdout.buffer.write(said)
"""
"""A client reading 2 KB every 10 ms at most, in a process of its own as a real client is:
read from the test's process, it waited on the server's threads (storing a 1 MB reply
holds the interpreter's lock in long regular-expression calls), and on a loaded machine
it took no byte for the send deadline and was cut."""


def models(proxy: RunningProxy) -> int:
    return httpx.get(f"{proxy.base_url}/models", timeout=HANG).status_code


def held(proxy: RunningProxy) -> int:
    """How many connections the server holds."""
    guard = proxy.server.config.app
    assert isinstance(guard, ConnectionGuard)
    return len(guard.open)


def closed_by_the_server(sock: socket.socket) -> bool:
    """Whether the server closed `sock` (what it had sent read and dropped)."""
    sock.settimeout(HANG)
    try:
        while sock.recv(1 << 16):
            pass
    except ConnectionResetError:
        pass  # aborted with bytes unsent: a reset
    return True


def replied(said: bytes) -> str:
    """The reply of an answer as read off the wire (streamed: chunked, as uvicorn sends it)."""
    head, _, rest = said.partition(b"\r\n\r\n")
    if b"content-length" in head:
        length = int(head.split(b"content-length: ")[1].split(b"\r\n")[0])
        assert len(rest) == length, f"{len(rest)} bytes of {length}"
        return str(json.loads(rest)["choices"][0]["message"]["content"])
    body = b""
    while True:
        size, _, rest = rest.partition(b"\r\n")
        if not int(size, 16):
            break
        body, rest = body + rest[:int(size, 16)], rest[int(size, 16) + 2:]
    events = [json.loads(line[6:]) for line in body.decode().split("\n\n")
              if line.startswith("data: {")]
    return "".join(event["choices"][0]["delta"].get("content", "") for event in events
                   if event["choices"])


def test_a_client_that_stops_reading_mid_answer_is_closed_and_its_place_freed(
        settings: Settings, chat_server: ChatServer, db_path: Path) -> None:
    """It held its place for ever: with every place held so, each other request was a 503.
    Closed, its turn is stored as cancelled, as a client's that hangs up mid-reply is, and
    the model's reply stops."""
    chat_server.plan = ["big-piece-then-drip"]
    chat_server.piece_goes.clear()
    with RunningProxy(settings, limits=Limits(requests=1, send_seconds=1.0)) as proxy, \
            asking(proxy, "停读") as stalled:
        wait_until(lambda: len(chat_server.requests) == 1, "the request reaches the model")
        assert models(proxy) == 503  # its place is held, and nothing of its answer sent yet
        chat_server.piece_goes.set()
        wait_until(lambda: models(proxy) == 200, "another client is served")
        assert closed_by_the_server(stalled)
        wait_until(lambda: statuses(db_path, "停读") == ["cancelled"],
                   "the turn is stored as cancelled")
        wait_until(chat_server.hung_up.is_set, "the model's reply is stopped")


def test_an_answer_sent_whole_that_is_not_read_closes_its_connection(
        settings: Settings, chat_server: ChatServer, db_path: Path) -> None:
    """Not streamed: the request ends at once, its answer in the transport's buffer, which
    the client never reads; the connection is closed all the same, the turn stored whole."""
    chat_server.plan = ["big-piece"]
    with RunningProxy(settings, limits=Limits(send_seconds=1.0)) as proxy, \
            asking(proxy, "整答", stream=False) as stalled:
        wait_until(lambda: statuses(db_path, "整答") == ["ok"], "the turn is stored")
        wait_until(lambda: not held(proxy), "the connection is let go")
        stalled.settimeout(HANG)
        said = b""
        while chunk := stalled.recv(1 << 16):
            said += chunk
        assert len(said) < len(PIECE.encode())  # the rest was dropped, not sent


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
def test_a_client_reading_slowly_is_not_cut_however_long_its_answer_takes(
        settings: Settings, chat_server: ChatServer, db_path: Path, stream: bool) -> None:
    """2 KB every 10 ms at most: 1 MB takes over 5 s, over two send deadlines, the
    transport's buffer full nearly all of it; nor is its answer's tail cut by the next
    request's head deadline (it began at the app's last write: an answer sent in one
    write, not streamed, lost all but its first 200 KB)."""
    chat_server.plan = ["big-piece"]
    limits = Limits(send_seconds=2.0, head_seconds=1.0)
    with RunningProxy(settings, limits=limits) as proxy:
        said = subprocess.run([sys.executable, "-I", "-c", SLOW_READER, str(proxy.port)],
                              input=request("慢读", stream), capture_output=True,
                              timeout=HANG, check=True).stdout
    assert replied(said) == PIECE  # every byte of it
    assert statuses(db_path, "慢读") == ["ok"]
