"""`chatmem mcp --http` as a process: real HTTP on 127.0.0.1, as a reverse proxy or a client
on this machine reaches it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from chat_server import ChatServer
from waiting import HANG, Watched

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

import httpx2 as httpx

TOKEN = "tok-abcdefghijklmnop1234"
HELLO = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "代理", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@contextmanager
def mcp_http(*args: str) -> Iterator[tuple[str, Watched]]:
    """`chatmem mcp --http 127.0.0.1:0 ARGS…`: its URL, and its stderr as it comes."""
    server = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "mcp", "--http", "127.0.0.1:0", *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        said = Watched(server.stderr)  # type: ignore[arg-type]
        text = said.wait_for(lambda t: "listening on" in t, "the server listens")
        yield text.split("listening on ", 1)[1].split()[0], said
    finally:
        server.terminate()
        server.wait(HANG)


@pytest.mark.parametrize("given", ["token", "tokens"])
def test_behind_a_reverse_proxy_a_token_guards_it_whatever_host_the_proxy_passes_on(
        tmp_path: Path, given: str) -> None:
    """With a token on loopback (as behind nginx or Caddy), the SDK's own check answered 421
    "Invalid Host header" to the public name a proxy passes on, and to 127.0.0.1 without its
    port, logging a multi-line warning: the token is what guards the server."""
    db = tmp_path / "h.db"
    if given == "token":
        args = ["--token", TOKEN]
    else:
        tokens = tmp_path / "tokens.toml"
        tokens.write_text(f'[tokens]\n"{TOKEN}" = "{tmp_path / "ann.db"}"\n')
        tokens.chmod(0o600)
        args = ["--tokens", str(tokens)]
    with mcp_http(*args, "--provider", "scripted", "--db", str(db)) as (url, said):
        for host in ("chat.example.com", "聊天.example.com".encode("idna").decode(),
                     "127.0.0.1", url.split("/")[2]):
            answered = httpx.post(url, json=HELLO, timeout=HANG, headers={
                **ACCEPT, "Host": host, "Authorization": f"Bearer {TOKEN}"})
            assert answered.status_code == 200, (host, answered.text)
        refused = httpx.post(url, json=HELLO, timeout=HANG,
                             headers={**ACCEPT, "Host": "chat.example.com"})
        assert refused.status_code == 401
        assert "Invalid Host" not in said.text


def test_without_a_token_a_page_is_answered_only_from_an_allowed_origin_and_as_json(
        tmp_path: Path) -> None:
    """Any loopback Origin was taken as this machine's; now only `--allow-origin`'s, which
    get their preflight answered and may read the session id the SDK hands out."""
    front_end = "http://localhost:5173"
    with mcp_http("--allow-origin", front_end, "--provider", "scripted", "--db",
                  str(tmp_path / "h.db")) as (url, said):
        asked = httpx.options(url, timeout=HANG, headers={
            "Origin": front_end, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,mcp-session-id,mcp-protocol-version"})
        assert asked.status_code == 204, asked.text
        assert asked.headers["access-control-allow-origin"] == front_end
        assert {"content-type", "mcp-session-id", "mcp-protocol-version"} <= set(
            asked.headers["access-control-allow-headers"].split(", "))
        assert "DELETE" in asked.headers["access-control-allow-methods"]
        answered = httpx.post(url, json=HELLO, timeout=HANG,
                              headers={**ACCEPT, "Origin": front_end})
        assert answered.status_code == 200, answered.text
        assert answered.headers["access-control-allow-origin"] == front_end
        assert "mcp-session-id" in answered.headers["access-control-expose-headers"]
        for origin, kind, status in (("http://127.0.0.1:8080", "application/json", 403),
                                     ("http://127.0.0.1:8080", "text/plain", 403),
                                     (front_end, "text/plain", 415)):
            refused = httpx.post(url, content=json.dumps(HELLO), timeout=HANG, headers={
                **ACCEPT, "Origin": origin, "Content-Type": kind})
            assert refused.status_code == status, (origin, kind, refused.text)
        said.wait_for(lambda t: "sent a body of Content-Type 'text/plain'" in t,
                      "the refusals logged")
        assert said.text.count("refused POST /mcp from") == 3


def test_a_batch_is_refused_in_one_line_and_2025_03_26_is_offered_the_version_before(
        tmp_path: Path) -> None:
    """Review: over HTTP the server agreed to protocol 2025-03-26, whose JSON-RPC allows
    batches, then answered a batch with pydantic's multi-line dump of four union members
    as "invalid params" (-32602). As over stdio: 2024-11-05 is offered, and a batch is an
    invalid request (-32600) in one line; a line that is no JSON is a parse error still."""
    hello = {**HELLO, "params": {**HELLO["params"], "protocolVersion": "2025-03-26"}}
    with mcp_http("--provider", "scripted", "--db", str(tmp_path / "h.db")) as (url, _):
        agreed = httpx.post(url, json=hello, timeout=HANG, headers=ACCEPT)
        session = {**ACCEPT, "Mcp-Session-Id": agreed.headers["mcp-session-id"],
                   "Mcp-Protocol-Version": "2024-11-05"}
        batch = httpx.post(url, json=[{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
                           timeout=HANG, headers=session)
        garbage = httpx.post(url, content=b"garbage", timeout=HANG,
                             headers={**session, "Content-Type": "application/json"})
        pong = httpx.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                          timeout=HANG, headers=session)
    assert '"protocolVersion":"2024-11-05"' in agreed.text
    assert batch.status_code == 400
    refused = batch.json()
    assert (refused["id"], refused["error"]["code"]) == (None, -32600)
    assert "\n" not in refused["error"]["message"] and "batch" in refused["error"]["message"]
    assert garbage.json()["error"]["code"] == -32700
    assert pong.status_code == 200 and '"id":2,"result":{}' in pong.text


def test_a_refused_request_without_a_session_is_given_no_session_id(tmp_path: Path) -> None:
    """A POST that is no initialize, or a GET, without a session id got its 400 with a fresh
    `mcp-session-id`: the id of a session the SDK made for the request and dropped as it
    refused it, which a client that kept it was then told was not found."""
    with mcp_http("--provider", "scripted", "--db", str(tmp_path / "h.db")) as (url, _):
        listed = httpx.post(url, timeout=HANG, headers=ACCEPT, json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        got = httpx.get(url, timeout=HANG, headers={"Accept": "text/event-stream"})
        opened = httpx.post(url, json=HELLO, timeout=HANG, headers=ACCEPT)
    for refused in (listed, got):
        assert refused.status_code == 400, refused.text
        assert "mcp-session-id" not in refused.headers, refused.headers
        assert "error" in refused.json()
    assert opened.status_code == 200
    assert len(opened.headers["mcp-session-id"]) == 32  # an initialize still opens one


def test_a_request_whose_id_is_no_string_nor_integer_is_refused_not_accepted(
        tmp_path: Path) -> None:
    """A POST of a request with id null, true or 1.5 was taken by the SDK as a notification:
    202 and no body, so a client waited for an answer that never came. It is a 400 holding
    an invalid request error with id null; a notification is still accepted (202), written
    with id null as JSON-RPC 1.0 wrote one too."""
    with mcp_http("--provider", "scripted", "--db", str(tmp_path / "h.db")) as (url, _):
        opened = httpx.post(url, json=HELLO, timeout=HANG, headers=ACCEPT)
        session = {**ACCEPT, "Mcp-Session-Id": opened.headers["mcp-session-id"],
                   "Mcp-Protocol-Version": "2025-06-18"}
        refused = [httpx.post(url, json={"jsonrpc": "2.0", "id": given, "method": "ping"},
                              timeout=HANG, headers=session) for given in (None, True, 1.5)]
        noticed = httpx.post(url, json={"jsonrpc": "2.0", "id": None,  # JSON-RPC 1.0's way
                                        "method": "notifications/initialized"},
                             timeout=HANG, headers=session)
    assert [r.status_code for r in refused] == [400] * 3
    assert [(r.json()["id"], r.json()["error"]["code"]) for r in refused] == [(None, -32600)] * 3
    assert "1.5" in refused[2].json()["error"]["message"]
    assert noticed.status_code == 202


def test_a_call_under_way_is_answered_before_a_sigterm_ends_the_server(
        chat_server: ChatServer, tmp_path: Path) -> None:
    """clients70: told to stop while a record_turn waited for its memory's update (the
    helper model extracting facts), `mcp --http` stored the turn but its answer never
    reached the client ("SSE stream ended without a response": sse-starlette ends every
    event stream at once on SIGTERM), so the client could only send it again, to be
    stored twice. The answer comes first now, then the server ends. It says it waits for
    the one call: the client's event stream (a GET, open as long as the session) was
    counted too ("waiting for 2 requests under way")."""
    import asyncio
    import signal

    from mcp import ClientSession
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    config = tmp_path / "config.toml"
    config.write_text("timeout = 3\nmax_retries = 0\n")
    server = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "mcp", "--http", "127.0.0.1:0", "--db",
         str(tmp_path / "h.db"), "--config", str(config), "--provider", "openai",
         "-m", "test-small"],
        env={**os.environ, "OPENAI_BASE_URL": chat_server.base_url, "OPENAI_API_KEY": "k"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        said = Watched(server.stderr)  # type: ignore[arg-type]
        text = said.wait_for(lambda t: "listening on" in t, "the server listens")
        url = text.split("listening on ", 1)[1].split()[0]

        async def work() -> Any:
            client = create_mcp_http_client()
            async with client, streamable_http_client(url, http_client=client) as streams, \
                    ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                await session.call_tool("start_conversation",
                                        {"name": "记事", "strategy": "entity"})
                chat_server.plan = ["hang"]  # the facts' extraction waits on the model
                call = asyncio.create_task(session.call_tool("record_turn", {
                    "conversation_id": "记事", "user": "我住在杭州", "assistant": "好的"}))
                while not chat_server.requests:
                    await asyncio.sleep(0.01)
                server.send_signal(signal.SIGTERM)
                return await call

        answer = asyncio.run(asyncio.wait_for(work(), HANG))
        server.wait(HANG)  # it ends once the call is answered
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(HANG)
    assert not answer.is_error, answer.content
    assert answer.structured_content["turn"] == 1
    stopping = [line for line in said.text.splitlines() if line.startswith("stopping:")]
    assert len(stopping) == 1 and "waiting for 1 request under way" in stopping[0], stopping


def test_a_body_over_the_limit_is_refused_as_it_comes_not_read_whole(tmp_path: Path) -> None:
    """chatmem's wrapper around the SDK read each POST body whole before the SDK's own 4 MiB
    check saw it: a 96 MiB body (streamed, no Content-Length) grew the server by more than
    that before its 413 came, as plain text. It is refused as it comes, and one that says
    its size up front at once, each with a JSON-RPC error."""
    from chatmem.mcp.http_bodies import BODY_REFUSED

    server = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "mcp", "--http", "127.0.0.1:0", "--provider",
         "scripted", "--db", str(tmp_path / "h.db")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        said = Watched(server.stderr)  # type: ignore[arg-type]
        text = said.wait_for(lambda t: "listening on" in t, "the server listens")
        url = text.split("listening on ", 1)[1].split()[0]

        def peak_kib() -> int:
            status = Path(f"/proc/{server.pid}/status").read_text()
            return int(next(line.split()[1] for line in status.splitlines()
                            if line.startswith("VmHWM:")))

        def body() -> Iterator[bytes]:
            yield b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "'
            for _ in range(96):
                yield "长".encode() * (1 << 18)
            yield b'"}}'

        before = peak_kib()
        streamed = httpx.post(url, content=body(), timeout=HANG, headers={
            **ACCEPT, "Content-Type": "application/json"})
        grown = peak_kib() - before
        declared = httpx.post(url, content=b"x" * (5 << 20), timeout=HANG, headers={
            **ACCEPT, "Content-Type": "application/json"})
        hello = httpx.post(url, json=HELLO, timeout=HANG, headers=ACCEPT)
    finally:
        server.terminate()
        server.wait(HANG)
    for refused in (streamed, declared):
        assert refused.status_code == 413
        assert refused.json()["error"] == {"code": -32600, "message": BODY_REFUSED}
    assert grown < 24 << 10, f"the server grew by {grown} KiB"
    assert hello.status_code == 200
