"""Requests naming one conversation, sent a few milliseconds apart on connections of their
own (a bot bridging a group chat, which sends each member's message as it comes without
waiting for the reply to the one before), are stored in the order the server read them.
Each request's thread raced the others' to the conversation: a new conversation's five
read u0 u2 u3 u4 u1. The real server process, a real history file, real HTTP."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from waiting import HANG, answers, wait_until

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

from chatmem.store import Store

CONVERSATIONS = 12
"""Each new: its first request opens it while the rest come (the race was there)."""
SENT = 5
APART = 0.005
"""Seconds between two requests' sending (each sent whole before the next)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_requests_of_one_conversation_are_stored_in_the_order_they_came(
        tmp_path: Path) -> None:
    db, port = tmp_path / "h.db", free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "chatmem", "serve", "--port", str(port), "--db", str(db),
         "--provider", "scripted"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=dict(os.environ))
    base = f"http://127.0.0.1:{port}/v1"

    def send(conversation: str, text: str) -> http.client.HTTPConnection:
        """`text` sent whole on a connection of its own; its answer read later."""
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG)
        body = json.dumps({"model": "scripted",
                           "messages": [{"role": "user", "content": text}]}).encode()
        connection.request("POST", "/v1/chat/completions", body, {
            "Content-Type": "application/json", "X-Chatmem-Conversation": conversation})
        return connection

    sent: dict[str, list[str]] = {}
    try:
        wait_until(lambda: answers(f"{base}/models"), "the server listening")
        for c in range(CONVERSATIONS):
            conversation = f"group-{c}"
            sent[conversation] = [f"{conversation} 第{n}条" for n in range(SENT)]
            # Sent one after another from this thread: each whole before the next.
            connections = []
            for text in sent[conversation]:
                connections.append(send(conversation, text))
                time.sleep(APART)
            statuses = []
            for connection in connections:
                with closing(connection):
                    answer = connection.getresponse()
                    answer.read()
                    statuses.append(answer.status)
            assert statuses == [200] * SENT
    finally:
        server.terminate()
        server.wait(timeout=HANG)

    with Store(db) as store:
        stored = {s.name: [t.input for t in store.turns.turns(s.id)]
                  for s in store.sessions.list_sessions()}
    assert stored == sent
