"""`chatmem serve` as a process, and the signals that end it: real HTTP on 127.0.0.1, the
model a small OpenAI-compatible server the test starts (tests/chat_server.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from chat_server import ChatServer
from test_proxy import statuses
from waiting import HANG, Watched

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")
if not hasattr(signal, "SIGHUP"):
    pytest.skip("no SIGHUP on this system", allow_module_level=True)

import httpx2 as httpx


@contextmanager
def serving(chat_server: ChatServer, db: Path,
            hangup: Callable[[int, object], object] | int = signal.SIG_DFL,
            ) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`chatmem serve` on a free port, SIGHUP as `hangup` when it starts (a test must not
    depend on how pytest was started: under nohup it is ignored): the process and its URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "serve", "--port", "0", "--provider", "openai",
         "--model", "test-small", "--db", str(db), "-s", "window"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, hangup),
        env={**os.environ, "OPENAI_BASE_URL": chat_server.base_url})
    try:
        said = Watched(server.stderr)  # type: ignore[arg-type]
        text = said.wait_for(lambda t: "listening on" in t, "the server listens")
        yield server, text.split("listening on ", 1)[1].split()[0]
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait(HANG)


def test_a_hangup_ends_the_server_as_sigterm_does_after_the_reply_under_way_is_stored(
        chat_server: ChatServer, tmp_path: Path) -> None:
    """uvicorn handles only SIGINT and SIGTERM: a closed terminal or a dropped ssh session
    killed the server at once, the streamed reply cut and its turn never stored."""
    db = tmp_path / "h.db"
    chat_server.plan = ["slow"]  # the first word, then held until released
    streamed: list[str] = []
    with serving(chat_server, db) as (server, url):
        def ask() -> None:
            with httpx.stream("POST", f"{url}/chat/completions", timeout=HANG, json={
                    "model": "test-small", "stream": True,
                    "messages": [{"role": "user", "content": "讲个故事"}]},
                    headers={"X-Chatmem-Conversation": "故事".encode()}) as answer:
                streamed.extend(line for line in answer.iter_lines() if line)

        asking = threading.Thread(target=ask)
        asking.start()
        assert chat_server.first_delta_sent.wait(HANG)
        server.send_signal(signal.SIGHUP)
        chat_server.release.set()
        asking.join(HANG)
        assert server.wait(HANG) == -signal.SIGHUP  # it still ends as hung up
    assert streamed[-1] == "data: [DONE]" and any("server." in line for line in streamed)
    assert statuses(db, "故事") == ["ok"]


def test_under_nohup_a_hangup_changes_nothing(chat_server: ChatServer, tmp_path: Path) -> None:
    with serving(chat_server, tmp_path / "h.db", hangup=signal.SIG_IGN) as (server, url):
        server.send_signal(signal.SIGHUP)
        answer = httpx.post(f"{url}/chat/completions", timeout=HANG, json={
            "model": "test-small", "messages": [{"role": "user", "content": "hi"}]})
        assert answer.status_code == 200 and server.poll() is None


@pytest.mark.parametrize("told_by", [signal.SIGINT, signal.SIGTERM])
def test_a_server_told_to_stop_says_it_waits_for_the_reply_under_way(
        chat_server: ChatServer, tmp_path: Path, told_by: int) -> None:
    """Ctrl-C while a reply was under way: the server finished and stored it first, as long
    as the model took (a minute for one that stalls), saying nothing, so it looked hung.
    Told by a SIGTERM (systemd, docker stop, kill), it said "Ctrl-C again stops at once",
    which no one may be there to press and a second SIGTERM does not do: it names the
    SIGINT that does, and that SIGINT stops it at once."""
    db = tmp_path / "h.db"
    chat_server.plan = ["slow"]  # the first word, then held until released
    server = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "serve", "--port", "0", "--provider", "openai",
         "--model", "test-small", "--db", str(db), "-s", "window"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "OPENAI_BASE_URL": chat_server.base_url})
    streamed: list[str] = []
    try:
        said = Watched(server.stderr)  # type: ignore[arg-type]
        url = said.wait_for(lambda t: "listening on" in t, "the server listens").split(
            "listening on ", 1)[1].split()[0]

        def ask() -> None:
            with httpx.stream("POST", f"{url}/chat/completions", timeout=HANG, json={
                    "model": "test-small", "stream": True,
                    "messages": [{"role": "user", "content": "讲个故事"}]},
                    headers={"X-Chatmem-Conversation": "story"}) as answer:
                try:
                    streamed.extend(line for line in answer.iter_lines() if line)
                except httpx.RemoteProtocolError:
                    streamed.append("cut")  # stopped at once: the reply is lost, as told

        asking = threading.Thread(target=ask)
        asking.start()
        assert chat_server.first_delta_sent.wait(HANG)
        server.send_signal(told_by)
        told = said.wait_for(lambda t: "stopping:" in t, "the server says it waits")
        assert server.poll() is None  # still waiting for the reply
        if told_by == signal.SIGTERM:
            server.send_signal(signal.SIGTERM)  # a second SIGTERM waits as the first
            assert server.poll() is None
            server.send_signal(signal.SIGINT)  # the one it names stops it at once
            server.wait(HANG)
        chat_server.release.set()
        asking.join(HANG)
        server.wait(HANG)
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait(HANG)
    assert "waiting for 1 request under way" in told
    if told_by == signal.SIGINT:
        assert "Ctrl-C again" in told
        assert streamed[-1] == "data: [DONE]"
        assert statuses(db, "story") == ["ok"]
    else:
        assert "Ctrl-C" not in told and f"kill -INT {server.pid}" in told
        assert streamed[-1] == "cut"
