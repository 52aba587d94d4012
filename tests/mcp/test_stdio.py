"""`chatmem mcp` over stdio answers every request, whatever text its JSON spells, and ends
when its client has gone.

The mcp client library cannot send a lone surrogate (pydantic refuses to write one), but
a client in another language can: these tests speak JSON-RPC lines to the real server
process, as such a client does."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from chat_server import running_chat_server
from cli_runner import output
from waiting import HANG, Watched, wait_until

pytest.importorskip("mcp", reason="chatmem[serve] (the mcp SDK) is not installed")


class LineClient:
    """A JSON-RPC client over the server's stdin and stdout, one JSON text a line."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "chatmem", "mcp", "--db", str(db), "--provider",
             "scripted"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=dict(os.environ))
        self.said = Watched(self.process.stdout)  # type: ignore[arg-type]
        self.last_id = 0

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request (its JSON as Python writes it: ensure_ascii, so a lone surrogate
        goes as the escape "\\ud800") and wait for the answer with its id."""
        self.last_id += 1
        asked = self.last_id
        self.send(json.dumps({"jsonrpc": "2.0", "id": asked, "method": method,
                              "params": params}))
        def answer(text: str) -> dict[str, Any] | None:
            whole_lines = text.split("\n")[:-1]  # the last may still be arriving
            return next((a for a in map(json.loads, whole_lines) if a.get("id") == asked),
                        None)

        text = self.said.wait_for(lambda t: answer(t) is not None,
                                  f"an answer to request {asked}")
        return answer(text)  # type: ignore[return-value]

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})["result"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def test_a_lone_surrogate_in_a_tool_call_is_answered_and_stored_as_a_replacement_character(
        tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    client = LineClient(db)
    try:
        client.request("initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                      "clientInfo": {"name": "test", "version": "1"}})
        client.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        client.call("start_conversation", name="代理")
        recorded = client.call("record_turn", conversation_id="代理", user="用户 \ud800 说",
                               assistant="回复 \udfff 😀")
        found = client.call("search_memory", conversation_id="代理", query="查询 \ud800")
        remembered = client.call("remember", conversation_id="代理", fact="名字: \ud800李")
    finally:
        client.close()
    assert recorded["structuredContent"]["turn"] == 1
    assert "hits" in found["structuredContent"]
    assert remembered["structuredContent"]["facts"][0]["value"] == "\ufffd李"
    # What the server stored, read in this process (the server's is the process under test).
    shown = output("sessions", "show", "代理", "--all", "--json", "--db", str(db))
    # A whole pair (😀, sent as two escapes) is the character it spells.
    assert [m["content"] for m in json.loads(shown)["messages"]] == [
        "用户 \ufffd 说", "回复 \ufffd 😀"]


def test_mending_leaves_every_other_line_as_it_came() -> None:
    from chatmem.mcp.stdio import mended

    for line in (b'{"a": "\\ud83d\\ude00"}\n', b'{"a": "\\\\ud800"}\n', b'not json \\ud800\n',
                 '{"a": "中文"}\r\n'.encode()):
        assert mended(line) == line
    assert mended(b'{"a": ["\\ud800", {"\\udc00": 1}]}\r\n') == \
        '{"a": ["\ufffd", {"\ufffd": 1}]}\r\n'.encode()


def test_a_server_whose_client_has_gone_mid_call_ends_and_its_history_is_intact(
        tmp_path: Path) -> None:
    db, config = tmp_path / "h.db", tmp_path / "config.toml"
    with running_chat_server() as upstream:
        upstream.plan = ["hang"] * 50  # every model call is held: the call never ends
        config.write_text(f'provider = "openai"\nbase_url = "{upstream.base_url}"\n'
                          f'model = "test-small"\n', encoding="utf-8")
        server = subprocess.Popen(
            [sys.executable, "-m", "chatmem", "mcp", "--db", str(db)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "CHATMEM_CONFIG": str(config), "OPENAI_API_KEY": "sk-test"})
        assert server.stdin is not None and server.stdout is not None

        def ask(number: int, method: str, params: dict[str, Any]) -> None:
            assert server.stdin is not None
            server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": number, "method": method,
                                           "params": params}).encode() + b"\n")
            server.stdin.flush()

        ask(1, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                              "clientInfo": {"name": "test", "version": "1"}})
        server.stdout.readline()
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        ask(2, "tools/call", {"name": "start_conversation", "arguments": {
            "name": "旅行", "strategy": "summary-buffer:max_tokens=80"}})
        server.stdout.readline()
        said = [(f"第{n}天我们去了北京的故宫和长城，天气很好。" * 4, f"好的，第{n}天记下了。")
                for n in range(1, 9)]
        for n, (user, assistant) in enumerate(said, 3):
            ask(n, "tools/call", {"name": "record_turn", "arguments": {
                "conversation_id": "旅行", "user": user, "assistant": assistant}})
        wait_until(lambda: bool(upstream.requests), "a summary asked of the model")
        server.stdin.close()  # the client's window is closed: both pipes go
        server.stdout.close()
        gone = time.monotonic()
        try:
            server.wait(timeout=30)
        finally:
            server.kill()
        assert time.monotonic() - gone < 30
    shown = output("sessions", "show", "旅行", "--all", "--json", "--db", str(db),
                   env={"CHATMEM_CONFIG": str(config)})
    stored = [m["content"] for m in json.loads(shown)["messages"]]
    # Each turn recorded before the client left is whole; none is half there. Their order
    # is not asserted: the calls were sent without waiting for answers, and the SDK runs
    # each on a worker thread of its own, so two may reach the conversation either way
    # round (one in four runs under load).
    assert stored and len(stored) % 2 == 0
    turns = list(zip(stored[::2], stored[1::2], strict=True))
    assert len(set(turns)) == len(turns) and set(turns) <= set(said), turns
    with sqlite3.connect(db) as history:
        assert history.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _relayed_in(data: bytes) -> float:
    """Seconds the stdin relay takes to pass `data` on through pipes (64 KiB reads, as from
    a client), checked whole."""
    from chatmem.mcp.stdio import _relay

    source, client = os.pipe()
    server, sink = os.pipe()
    listening, answers = os.pipe()
    stopped = threading.Event()
    stopped.set()  # the server has stopped: the relay ends once the client reads no more
    passed: list[bytes] = []

    def send() -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(client, view[:65536]):]
        os.close(client)

    def receive() -> None:
        while piece := os.read(server, 1 << 20):
            passed.append(piece)

    start = time.perf_counter()
    ends = [threading.Thread(target=send), threading.Thread(target=receive)]
    relay = threading.Thread(target=_relay, args=(source, sink, answers, stopped, lambda: None))
    for thread in (relay, *ends):
        thread.start()
    for thread in ends:
        thread.join(HANG)
    os.close(listening)  # nobody reads the answers: the relay stops
    relay.join(HANG)
    took = time.perf_counter() - start
    for fd in (source, server, answers):
        os.close(fd)
    assert b"".join(passed) == data
    return took


def test_a_long_line_is_relayed_in_time_that_grows_with_its_length_not_its_square() -> None:
    """Each chunk was glued to the whole line before it and split again: 30 MB took 67 s.
    One 16 MiB line (the longest read, MOST_LINE_BYTES) against the same bytes as 16,384
    lines of 1 KiB: a linear relay takes about as long for either; the quadratic one took
    over 50 times as long for 32 MiB."""
    size = 16 << 20
    one = b'{"a": "' + "中".encode() * ((size - 11) // 3) + b'"}\n'
    short = b'{"a": "' + b"x" * 1014 + b'"}\n'
    many = short * (size // len(short))
    assert many.count(b"\n") == 16384
    took_one = min(_relayed_in(one) for _ in range(2))
    took_many = min(_relayed_in(many) for _ in range(2))
    assert took_one < 15 * took_many + 0.5, (took_one, took_many)


def test_a_batch_and_a_line_that_is_no_json_are_answered_not_left_waiting(
        tmp_path: Path) -> None:
    """Review: the server agreed to protocol 2025-03-26, whose JSON-RPC allows batches, but
    the SDK drops a line it cannot read as one message: a batch, or a line that is no JSON,
    got no answer and the client waited forever. Each is answered (invalid request, parse
    error; id null) and a client asking for 2025-03-26 is offered 2024-11-05, which has no
    batches; the requests after them are answered as ever."""
    client = LineClient(tmp_path / "h.db")
    try:
        agreed = client.request("initialize", {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}})
        client.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        client.send(json.dumps([{"jsonrpc": "2.0", "id": 50, "method": "ping"}]))
        client.send("garbage 不是 JSON")
        client.send("[]")
        pong = client.request("ping", {})
        lines = client.said.wait_for(lambda t: t.count("\n") >= 5, "five answers")
    finally:
        client.close()
    answers = [json.loads(line) for line in lines.split("\n")[:-1]]
    assert agreed["result"]["protocolVersion"] == "2024-11-05"
    refused = [(a["id"], a["error"]["code"]) for a in answers if "error" in a]
    assert refused == [(None, -32600), (None, -32700), (None, -32600)]
    assert pong == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert not any(a.get("id") == 50 for a in answers)  # nothing of the batch was done


def test_a_request_that_is_not_json_rpc_2_is_answered_with_its_id_and_not_as_a_batch(
        tmp_path: Path) -> None:
    """A request whose params were a list was refused as a batch, and one whose jsonrpc was
    "1.0" was answered with id null, so its client could not tell which request failed."""
    client = LineClient(tmp_path / "h.db")
    try:
        client.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}})
        client.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        client.send(json.dumps({"jsonrpc": "2.0", "id": 41, "method": "ping", "params": []}))
        client.send(json.dumps({"jsonrpc": "1.0", "id": "四十二", "method": "ping"}))
        pong = client.request("ping", {})
        lines = client.said.wait_for(lambda t: t.count("\n") >= 4, "four answers")
    finally:
        client.close()
    answers = [json.loads(line) for line in lines.split("\n")[:-1]]
    refused = {a["id"]: a["error"] for a in answers if "error" in a}
    assert refused.keys() == {41, "四十二"}
    assert {e["code"] for e in refused.values()} == {-32600}
    assert all("batch" not in e["message"] for e in refused.values())
    assert pong["result"] == {}


def test_a_request_whose_id_is_no_string_nor_integer_is_answered_with_id_null(
        tmp_path: Path) -> None:
    """A request with id null, true, 1.5, an object or an array was read by the SDK as a
    notification and never answered: its client waited forever. Each is an invalid request
    (id null, as JSON-RPC answers a request whose id it cannot use), nothing of it is done
    (a record_turn stores nothing), and a notification (no id, or JSON-RPC 1.0's id null) is
    still not answered."""
    db = tmp_path / "h.db"
    client = LineClient(db)
    odd: list[Any] = [None, True, 1.5, {"对": 1}, [7]]
    try:
        client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "test", "version": "1"}})
        # A notification as JSON-RPC 1.0 wrote one (id null) is taken as one: no answer.
        client.send(json.dumps({"jsonrpc": "2.0", "id": None,
                                "method": "notifications/initialized"}))
        client.call("start_conversation", name="代理")
        for given in odd:
            client.send(json.dumps({"jsonrpc": "2.0", "id": given, "method": "tools/call",
                                    "params": {"name": "record_turn", "arguments": {
                                        "conversation_id": "代理", "user": "你好",
                                        "assistant": "好"}}}))
        client.send(json.dumps({"jsonrpc": "2.0", "method": "tools/list"}))
        pong = client.request("ping", {})
        lines = client.said.wait_for(lambda t: t.count("\n") >= 8, "eight answers")
    finally:
        client.close()
    answers = [json.loads(line) for line in lines.split("\n")[:-1]]
    refused = [a for a in answers if "error" in a]
    assert [(a["id"], a["error"]["code"]) for a in refused] == [(None, -32600)] * len(odd)
    assert [a["error"]["message"].split("was ", 1)[1] for a in refused] == [
        "null", "true", "1.5", '{"对": 1}', "[7]"]
    assert pong["result"] == {} and len(answers) == 8  # initialize, start, 5 refused, ping
    shown = output("sessions", "show", "代理", "--json", "--db", str(db))
    assert json.loads(shown)["messages"] == []


def test_a_line_past_the_longest_read_is_dropped_as_it_comes_and_answered(
        tmp_path: Path) -> None:
    """A line was held whole however long: one that never ended grew the server's memory
    until the machine ran out, and a record_turn of 17 MiB was stored (serve and `mcp
    --http` refuse a body over 16 MiB). Past MOST_LINE_BYTES its bytes are counted and
    dropped; the line is answered as an invalid request (id null: the id went with the
    line) naming its size, nothing of it is done, and the next request is answered."""
    from chatmem.mcp.stdio import MOST_LINE_BYTES

    db = tmp_path / "h.db"
    client = LineClient(db)
    try:
        client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "test", "version": "1"}})
        client.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        client.call("start_conversation", name="代理")
        line = json.dumps({"jsonrpc": "2.0", "id": 90, "method": "tools/call", "params": {
            "name": "record_turn", "arguments": {"conversation_id": "代理",
                                                 "user": "长" * (MOST_LINE_BYTES // 3),
                                                 "assistant": "好"}}}, ensure_ascii=False)
        client.send(line)
        pong = client.request("ping", {})
        lines = client.said.wait_for(lambda t: t.count("\n") >= 4, "four answers")
    finally:
        client.close()
    answers = [json.loads(text) for text in lines.split("\n")[:-1]]
    refused = [a for a in answers if "error" in a]
    size = len(line.encode())
    assert [(a["id"], a["error"]["code"], a["error"]["message"]) for a in refused] == [
        (None, -32600, f"Invalid Request: a line of {size:,} bytes; at most "
                       f"{MOST_LINE_BYTES:,} are read as one message (nothing of it was done)")]
    assert pong["result"] == {} and not any(a.get("id") == 90 for a in answers)
    shown = output("sessions", "show", "代理", "--json", "--db", str(db))
    assert json.loads(shown)["messages"] == []
