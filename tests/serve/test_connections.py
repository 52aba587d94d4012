"""Connections that never finish their request cannot make serve (or `mcp --http`, run by the
same server_config) unreachable: requests past a cap answered 503 (idle sockets counting for
nothing), at a ceiling the connection heard from least recently without a request closed to
make room, a head and a body deadline, running out of open files said once, not a traceback
per accept, and warnings a client can have uvicorn repeat said once a minute. Real uvicorn on
127.0.0.1, limits made small through the public Limits."""

from __future__ import annotations

import asyncio
import errno
import logging
import select
import socket
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
from chat_server import ChatServer
from test_proxy import RunningProxy
from waiting import HANG, wait_until

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx

from chatmem.config.settings import Settings
from chatmem.serve.connections import REQUESTS, Limits
from chatmem.serve.server_logs import OutOfFiles, Repeated


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


def models(proxy: RunningProxy, token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(f"{proxy.base_url}/models", headers=headers, timeout=HANG).status_code


@contextmanager
def silent(proxy: RunningProxy, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections that sent nothing."""
    with ExitStack() as held:
        yield [held.enter_context(socket.create_connection(("127.0.0.1", proxy.port)))
               for _ in range(count)]


def answer(sock: socket.socket) -> bytes:
    """One whole answer read from `sock`, which stays open."""
    sock.settimeout(HANG)
    said = b""
    while b"\r\n\r\n" not in said:
        said += sock.recv(4096)
    head, _, body = said.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += sock.recv(4096)
    return said


def still_open(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    return not readable  # a closed connection reads as its end at once


@contextmanager
def held_at_the_model(proxy: RunningProxy, chat_server: ChatServer,
                      count: int) -> Iterator[None]:
    """`count` chat requests under way, each waiting on a model that answers nothing until
    the block ends."""
    chat_server.plan = ["hang"] * count
    asking = [threading.Thread(target=httpx.post, args=(f"{proxy.base_url}/chat/completions",),
                               kwargs={"timeout": HANG, "headers": {
                                   "X-Chatmem-Conversation": quote(f"会话{n}")}, "json": {
                                   "model": "test-small",
                                   "messages": [{"role": "user", "content": f"第{n}个"}]}})
              for n in range(count)]
    try:
        for thread in asking:
            thread.start()
        wait_until(lambda: len(chat_server.requests) == count, "each request waits on the model")
        yield
    finally:
        chat_server.release.set()
        for thread in asking:
            thread.join(HANG)


def test_idle_sockets_past_the_request_cap_do_not_stop_a_request_with_a_token(
        settings: Settings) -> None:
    """uvicorn's limit_concurrency counted every open connection: 128 sockets anyone opened,
    sending nothing, and every request, its token right, was answered 503."""
    with RunningProxy(settings, token="sekret") as proxy, silent(proxy, REQUESTS + 2), \
            half_sent(proxy, 2):
        assert models(proxy, "sekret") == 200
        assert models(proxy) == 401


def test_past_the_request_cap_a_request_gets_503_at_once_and_is_served_once_one_ends(
        settings: Settings, chat_server: ChatServer) -> None:
    with RunningProxy(settings, limits=Limits(requests=2)) as proxy:
        with held_at_the_model(proxy, chat_server, 2):
            refused = httpx.get(f"{proxy.base_url}/models", timeout=HANG)
            assert refused.status_code == 503  # answered, not left waiting
            assert refused.json()["error"]["code"] == "server_busy"
            assert refused.headers["retry-after"] == "1"
        wait_until(lambda: models(proxy) == 200, "served once the requests ended")


def test_at_the_ceiling_a_new_connection_closes_the_one_heard_from_least_recently(
        settings: Settings) -> None:
    """A connection past the ceiling was closed as it was accepted: as many idle sockets as
    the ceiling, and every new request failed. Now each new connection closes the idle one
    heard from least recently, so an idle flood closes its own, not a client's request."""
    asked = (b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
             b"Authorization: Bearer sekret\r\n\r\n")
    with RunningProxy(settings, token="sekret", limits=Limits(ceiling=8)) as proxy, \
            socket.create_connection(("127.0.0.1", proxy.port)) as kept:
        kept.sendall(asked)
        assert answer(kept).startswith(b"HTTP/1.1 200 ")  # kept alive, idle since
        with silent(proxy, 4) as flood, half_sent(proxy, 3) as dripping:
            assert models(proxy, "sekret") == 200  # the kept-alive one made room
            assert closed(kept) == b""
            assert all(still_open(sock) for sock in flood + dripping)
            with silent(proxy, 8) as more:
                assert models(proxy, "sekret") == 200
                assert [closed(sock) for sock in flood + dripping] == [b""] * 7
                assert still_open(more[-1])


def test_at_the_ceiling_with_every_connection_busy_a_new_one_is_closed_as_it_is_accepted(
        settings: Settings, chat_server: ChatServer) -> None:
    with RunningProxy(settings, limits=Limits(ceiling=3)) as proxy, \
            held_at_the_model(proxy, chat_server, 3), \
            socket.create_connection(("127.0.0.1", proxy.port)) as extra:
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


UPGRADE = (b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: upgrade\r\n"
           b"Upgrade: websocket\r\n\r\n")


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.said: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.said.append(record.getMessage())


def test_upgrade_requests_in_a_flood_write_a_bounded_number_of_log_lines(
        settings: Settings) -> None:
    """Each request with `Connection: upgrade` wrote two warnings (uvicorn serves no
    upgrade here): anyone could fill the server's log, token or not."""
    proxy = RunningProxy(settings, token="sekret")  # uvicorn sets its log's handlers here
    uvicorn_log = logging.getLogger("uvicorn.error")
    for kept in uvicorn_log.filters:
        if isinstance(kept, Repeated):
            kept.said.clear()  # whatever another test of this process had it say
    lines = Lines()
    uvicorn_log.addHandler(lines)
    try:
        with proxy, socket.create_connection(("127.0.0.1", proxy.port)) as sock:
            sock.settimeout(HANG)
            for _ in range(10):  # 200 requests, pipelined 20 at a time
                sock.sendall(UPGRADE * 20)
                answers = b""
                while answers.count(b"HTTP/1.1 401") < 20:
                    answers += sock.recv(1 << 16)
    finally:
        uvicorn_log.removeHandler(lines)
    assert lines.said == [
        "Unsupported upgrade request.",
        "No supported WebSocket library detected. Please use \"pip install "
        "'uvicorn[standard]'\", or install 'websockets' or 'wsproto' manually."]


def test_a_repeated_warning_is_said_once_a_minute_with_a_count_and_others_all_pass() -> None:
    quiet = Repeated(every=60.0)
    said = [record.getMessage() for record in (
        logging.makeLogRecord({"msg": msg, "levelno": logging.WARNING})
        for msg in ["Invalid HTTP request received."] * 3 + ["Exception in ASGI application\n"]
        * 2) if quiet.filter(record)]
    assert said == ["Invalid HTTP request received."] + ["Exception in ASGI application\n"] * 2
    quiet.said["Invalid HTTP request received"] = (-1e9, 2)  # a minute has gone by
    record = logging.makeLogRecord({"msg": "Invalid HTTP request received."})
    assert quiet.filter(record)
    assert record.getMessage() == "Invalid HTTP request received. (2 more since the last)"


def test_a_head_past_its_largest_is_refused_whichever_http_parser_is_installed(
        settings: Settings) -> None:
    """The largest head is h11's setting; with httptools installed (uvicorn[standard], the
    test environment has it) uvicorn's `auto` picked httptools, which bounds no header: a
    1 MB header was read whole and answered 200."""
    pytest.importorskip("httptools", reason="the test extra installs httptools")
    padded = (b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"x" * (1 << 20)
              + b"\r\n\r\n")
    with RunningProxy(settings) as proxy:
        with socket.create_connection(("127.0.0.1", proxy.port)) as sock:
            try:
                sock.sendall(padded)
                said = closed(sock)
            except (ConnectionResetError, BrokenPipeError):
                said = b""  # answered 400 and closed while the rest was still being sent
        assert not said.startswith(b"HTTP/1.1 200 "), said[:80]
        assert models(proxy) == 200  # a head within bounds is served
