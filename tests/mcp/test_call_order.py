"""A client that records its turns without waiting for each answer (a batch of JSON-RPC
lines on the server's stdin) has them stored in the order it sent them. The SDK runs each
tool call on a worker thread of its own, and whichever reached the conversation first was
stored first: the history read u0 u1 u3 u2 u4. The real server process over stdio, a real
history file."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from waiting import HANG, Watched

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")

from chatmem.config.settings import Settings
from chatmem.mcp.memory import QUEUED

BATCHES = 6
"""Batches of calls sent at once: one out of order in any fails the test (on the code
before the fix, about one batch in three was)."""


def line(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                       "params": params}).encode() + b"\n"


def answers(said: Watched, ids: set[int]) -> dict[int, dict[str, Any]]:
    def found(text: str) -> dict[int, dict[str, Any]]:
        whole = [json.loads(t) for t in text.split("\n")[:-1]]
        return {a["id"]: a for a in whole if a.get("id") in ids}

    return found(said.wait_for(lambda t: len(found(t)) == len(ids), f"answers to {ids}"))


def started(args: list[str], client: str, conversation: dict[str, Any]
            ) -> tuple[subprocess.Popen[bytes], Watched]:
    """The real `chatmem mcp` over stdio, initialized, `conversation` started (the answers
    to ids 0 and 1 read)."""
    server = subprocess.Popen([sys.executable, "-m", "chatmem", "mcp", *args],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=dict(os.environ))
    assert server.stdin is not None and server.stdout is not None
    said = Watched(server.stdout)
    try:
        server.stdin.write(line(0, "initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": client, "version": "1"}}))
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        server.stdin.write(line(1, "tools/call", {"name": "start_conversation",
                                                  "arguments": conversation}))
        server.stdin.flush()
        answers(said, {0, 1})
    except BaseException:
        server.kill()
        server.wait()
        raise
    return server, said


def sent_while_another_process_writes(db: Path, calls: list[bytes]) -> dict[int, dict[str, Any]]:
    """`calls` (ids 2, 3, ...) sent at once to a real `chatmem mcp` over `db` (a conversation
    `warm` started first: the history exists) while another process holds the history's write
    lock for a second; their answers, by id."""
    import sqlite3

    server, said = started(["--db", str(db), "--provider", "scripted"], "parallel",
                           {"name": "warm"})
    assert server.stdin is not None
    try:
        writer = sqlite3.connect(db, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")
        for call in calls:
            server.stdin.write(call)
        server.stdin.flush()
        time.sleep(1)
        writer.execute("ROLLBACK")
        writer.close()
        return answers(said, set(range(2, 2 + len(calls))))
    finally:
        server.stdin.close()
        server.wait(timeout=HANG)


def stored_user_messages(db: Path, name: str) -> list[str]:
    from chatmem.app import Workspace
    from chatmem.app.sessions import session_named

    with Workspace(Settings(provider="scripted", db=str(db))) as ws:
        session = session_named(ws, name)
        return [m.content for m in ws.store.history.messages(session.id) if m.role == "user"]


def test_turns_sent_without_waiting_are_stored_in_the_order_they_were_sent(
        tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    server, said = started(["--db", str(db), "--provider", "scripted"], "batch",
                           {"name": "顺序"})
    assert server.stdin is not None
    try:
        sent: list[str] = []
        recorded: dict[str, Any] = {}
        for batch in range(BATCHES):
            # One under way and QUEUED waiting for it: none of them is answered busy.
            # Ids apart from initialize's and start_conversation's (0 and 1): their answers
            # are already in what the server said, and would pass for this batch's.
            said_now = {100 * (batch + 1) + n: f"第{batch}批 u{n}" for n in range(QUEUED + 1)}
            server.stdin.write(b"".join(line(request_id, "tools/call", {
                "name": "record_turn", "arguments": {
                    "conversation_id": "顺序", "user": user, "assistant": f"a {user}"}})
                for request_id, user in said_now.items()))
            server.stdin.flush()
            for request_id, answer in answers(said, set(said_now)).items():
                recorded[said_now[request_id]] = answer["result"]
            sent.extend(said_now.values())
    finally:
        server.stdin.close()
        server.wait()

    assert [r.get("isError", False) for r in recorded.values()] == [False] * len(sent)
    # Each call answered with the turn it was sent as.
    assert [recorded[user]["structuredContent"]["turn"] for user in sent] == list(
        range(1, len(sent) + 1))
    assert stored_user_messages(db, "顺序") == sent


def test_turns_sent_just_before_stdin_ends_are_all_stored_and_answered(
        tmp_path: Path) -> None:
    """A client that writes its record_turn lines and closes stdin at once (a shell pipe)
    has every one kept: the SDK cancelled the calls still waiting for the conversation when
    it saw the end, and they were neither stored nor answered."""
    # The model's request log is a FIFO read only once stdin has ended: the first turn's
    # summary call blocks writing its (larger than a pipe) log entry, the rest wait for it.
    log = tmp_path / "model.log"
    os.mkfifo(log)
    config = tmp_path / "config.toml"
    config.write_text(f'provider = "scripted"\n\n[scripted]\nlog = "{log}"\n',
                      encoding="utf-8")
    reader = os.open(log, os.O_RDONLY | os.O_NONBLOCK)
    keeper = os.open(log, os.O_WRONLY)  # no end of the log while the server runs
    os.set_blocking(reader, True)
    db = tmp_path / "h.db"
    server, said = started(["--db", str(db), "--config", str(config)], "pipe",
                           {"name": "管道", "strategy": "summary"})
    assert server.stdin is not None
    draining = threading.Event()

    def drain() -> None:
        draining.wait()
        while server.poll() is None:
            if select.select([reader], [], [], 0.05)[0]:
                os.read(reader, 65536)

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    sent = {10 + n: (f"第{n}句 " + "我们五月去杭州，住在西湖边。" * (8000 if n == 0 else 1))
            for n in range(QUEUED + 1)}
    try:
        server.stdin.write(b"".join(line(request_id, "tools/call", {
            "name": "record_turn", "arguments": {
                "conversation_id": "管道", "user": user, "assistant": "好的。"}})
            for request_id, user in sent.items()))
        server.stdin.close()
        assert os.read(reader, 1)  # the first turn's summary is asked of the model
        time.sleep(1)  # the server has seen stdin end, the other four still waiting
        draining.set()
        server.wait(timeout=HANG)
        drainer.join(HANG)
    finally:
        server.kill()
        os.close(keeper)
        os.close(reader)

    assert server.returncode == 0
    assert stored_user_messages(db, "管道") == list(sent.values())
    answered = {a["id"]: a for a in map(json.loads, said.rest().splitlines()) if "id" in a}
    assert [answered[request_id]["result"]["structuredContent"]["turn"]
            for request_id in sent] == list(range(1, len(sent) + 1))


@pytest.mark.parametrize("name", ["trip", "旅行"])
def test_a_turn_sent_right_after_its_start_conversation_waits_for_it(
        tmp_path: Path, name: str) -> None:
    """A client that starts a conversation and records its first turn without waiting for
    the first answer (a model's parallel tool calls: the handle is the name it chose) had the
    turn refused, "no session named", whenever the start was slower than the turn's look
    for the session (here: another process writing the history while both come)."""
    answered = sent_while_another_process_writes(tmp_path / "h.db", [
        line(2, "tools/call", {"name": "start_conversation", "arguments": {"name": name}}),
        line(3, "tools/call", {"name": "record_turn", "arguments": {
            "conversation_id": name, "user": "我们五月去杭州", "assistant": "好的。"}})])
    assert answered[2]["result"]["structuredContent"]["created"] is True
    assert answered[3]["result"].get("isError", False) is False, answered[3]
    assert answered[3]["result"]["structuredContent"]["turn"] == 1


def test_of_two_starts_of_one_new_conversation_sent_at_once_one_says_it_created_it(
        tmp_path: Path) -> None:
    """Two start_conversation calls of one new name, sent without waiting (two windows of a
    client, a model's parallel calls), both answered created: true, each having looked for
    the conversation before either made it. The one that made it says so; the other joined
    it (created: false); the history holds it once."""
    db = tmp_path / "h.db"
    answered = sent_while_another_process_writes(db, [  # both look before either can write
        line(request_id, "tools/call", {"name": "start_conversation",
                                        "arguments": {"name": "晚餐"}})
        for request_id in (2, 3)])
    results = [answered[i]["result"]["structuredContent"] for i in (2, 3)]
    assert sorted(r["created"] for r in results) == [False, True]
    assert {r["conversation_id"] for r in results} == {"晚餐"}
    assert stored_user_messages(db, "晚餐") == []
