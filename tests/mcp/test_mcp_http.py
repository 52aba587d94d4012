"""`chatmem mcp --http` as a process: real HTTP on 127.0.0.1, as a reverse proxy or a client
on this machine reaches it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
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
