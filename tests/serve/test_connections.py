"""Connections that never finish their request cannot make serve (or `mcp --http`, run by the
same server_config) unreachable: a cap answered 503, a ceiling closed at accept, a head and a
body deadline, and running out of open files said once, not a traceback per accept. Real
uvicorn on 127.0.0.1, deadlines made short through the public Limits."""

from __future__ import annotations

import asyncio
import errno
import logging
import select
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from chat_server import ChatServer
from test_proxy import RunningProxy
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx

from chatmem.config.settings import Settings
from chatmem.serve.connections import Limits, OutOfFiles


@pytest.fixture
def settings(chat_server: ChatServer, db_path: Path) -> Settings:
    return Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                    db=str(db_path))


HALF_HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"


@contextmanager
def half_sent(proxy: RunningProxy, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections that sent half a request's head and nothing more."""
    with ExitStack() as held:
        socks = []
        for _ in range(count):
            sock = held.enter_context(socket.create_connection(("127.0.0.1", proxy.port)))
            sock.sendall(HALF_HEAD)
            socks.append(sock)
        yield socks


def closed(sock: socket.socket) -> bytes:
    """What the server said on `sock` before it closed it (fails if it stays open)."""
    sock.settimeout(HANG)
    said = b""
    while chunk := sock.recv(4096):
        said += chunk
    return said


def models(proxy: RunningProxy) -> int:
    return httpx.get(f"{proxy.base_url}/models", timeout=HANG).status_code


def test_past_the_cap_a_request_gets_503_at_once_and_is_served_once_idle_ones_are_dropped(
        settings: Settings) -> None:
    with RunningProxy(settings, limits=Limits(connections=4, head_seconds=1.0)) as proxy:
        assert models(proxy) == 200
        with half_sent(proxy, 4) as idle:
            assert models(proxy) == 503  # answered, not left waiting
            assert [closed(sock) for sock in idle] == [b""] * 4  # dropped at the deadline
            assert models(proxy) == 200


def test_past_the_ceiling_a_connection_is_closed_as_it_is_accepted(
        settings: Settings) -> None:
    with RunningProxy(settings, limits=Limits(connections=2, ceiling=3)) as proxy, \
            half_sent(proxy, 3), socket.create_connection(("127.0.0.1", proxy.port)) as extra:
        assert closed(extra).startswith(b"HTTP/1.1 503 ")


def test_a_head_dripped_a_line_at_a_time_is_dropped_at_its_deadline(
        settings: Settings) -> None:
    with RunningProxy(settings, limits=Limits(head_seconds=0.5)) as proxy, \
            socket.create_connection(("127.0.0.1", proxy.port)) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\n")
        for line in range(1000):  # a line each 0.1 s: 100 s if the connection were kept
            readable, _, _ = select.select([sock], [], [], 0.1)
            if readable:
                break
            sock.sendall(b"X-Drip-%d: 1\r\n" % line)
        assert closed(sock) == b"" and line < 999


def test_a_body_that_does_not_arrive_by_its_deadline_closes_the_connection(
        settings: Settings) -> None:
    with RunningProxy(settings, limits=Limits(body_seconds=0.5)) as proxy, \
            socket.create_connection(("127.0.0.1", proxy.port)) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"mo")
        assert b" 200 " not in closed(sock)


def test_running_out_of_open_files_is_one_line_a_minute_not_a_traceback_per_accept(
        caplog: pytest.LogCaptureFixture) -> None:
    quiet = OutOfFiles(every=60.0)
    logger = logging.getLogger("asyncio")
    logger.addFilter(quiet)
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            for _ in range(500):  # as asyncio's accept says it, once per failed accept
                loop.call_exception_handler({
                    "message": "socket.accept() out of system resource",
                    "exception": OSError(errno.EMFILE, "Too many open files")})
            loop.call_exception_handler({"message": "something else",
                                         "exception": ValueError("kept")})
    finally:
        loop.close()
        logger.removeFilter(quiet)
    said = [(record.getMessage(), record.exc_info) for record in caplog.records]
    assert said[0] == ("out of open files (Too many open files): new connections wait until "
                       "some close", None)
    assert len(said) == 2 and said[1][0].startswith("something else") and said[1][1]
