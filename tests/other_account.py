"""A request made by another account of this machine: a forked child that takes the uid of
`nobody` and speaks plain HTTP/1.1 on a socket of its own, or holds a connection open. Only
root may change its uid, so the tests that use it are skipped otherwise."""

from __future__ import annotations

import encodings.idna  # noqa: F401  (the child, as nobody, cannot read /root's stdlib)
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

NOBODY = 65534

needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="only root can connect as another account")


def status_as_nobody(host: str, port: int, method: str, path: str, body: bytes = b"",
                     headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """The status the server gave `nobody`, and its whole answer (or why the child failed).
    The child only calls what the parent
    imported already (a fork of a process with threads must not take their locks)."""
    request = (f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
               f"Content-Length: {len(body)}\r\n"
               + "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
               + "\r\n").encode() + body
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child ends with _exit)
        answer = b"HTTP/1.1 000 the child failed\r\n\r\n"
        try:
            os.close(read)
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            with socket.create_connection((host, port), timeout=60) as sock:
                sock.sendall(request)
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
        except BaseException as e:
            answer = f"HTTP/1.1 000 {e!r}\r\n\r\n".encode()
        finally:
            os.write(write, answer)
            os._exit(0)
    os.close(write)
    answer = b""
    while chunk := os.read(read, 65536):
        answer += chunk
    os.close(read)
    os.waitpid(child, 0)
    status_line = answer.partition(b"\r\n")[0]
    return int(status_line.split()[1]), answer


@contextmanager
def connected_as_nobody(host: str, port: int) -> Iterator[tuple[str, int]]:
    """A connection `nobody` holds open to HOST:PORT while the block runs: its own end (the
    child's local address and port), or the child's failure as an AssertionError."""
    ready_read, ready_write = os.pipe()
    done_read, done_write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child ends with _exit)
        try:
            os.close(ready_read)
            os.close(done_write)
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            with socket.create_connection((host, port), timeout=60) as sock:
                local = sock.getsockname()
                os.write(ready_write, f"{local[0]} {local[1]}".encode())
                os.close(ready_write)
                os.read(done_read, 1)  # until the parent is done with the connection
        except BaseException as e:
            os.write(ready_write, f"!{e!r}".encode())
        finally:
            os._exit(0)
    os.close(ready_write)
    os.close(done_read)
    try:
        said = os.read(ready_read, 4096).decode()
        assert said and not said.startswith("!"), f"the child failed: {said}"
        address, _, local_port = said.rpartition(" ")
        yield address, int(local_port)
    finally:
        os.close(done_write)
        os.close(ready_read)
        os.waitpid(child, 0)
