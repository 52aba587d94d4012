"""A streamed turn of `chatmem serve` as the official openai client reads it: OpenAI's chunks,
usage only when asked, in a chunk of its own."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from chat_server import ChatServer
from openai import OpenAI
from starlette.testclient import TestClient
from test_proxy import RunningProxy
from waiting import HANG, wait_until

from chatmem.config.settings import Settings
from chatmem.serve.proxy import build_app


def test_usage_is_streamed_only_when_asked_as_a_last_chunk_without_choices(
        tmp_path: Path) -> None:
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"))
    with TestClient(build_app(settings, strategy="window")) as http:
        openai = OpenAI(base_url="http://testserver/v1", api_key="unused", http_client=http,
                        max_retries=0)
        header = {"X-Chatmem-Conversation": quote("用量")}  # as the README says
        plain = list(openai.chat.completions.create(
            model="scripted", stream=True, extra_headers=header,
            messages=[{"role": "user", "content": "你好，今天天气怎么样？"}]))
        asked = list(openai.chat.completions.create(
            model="scripted", stream=True, extra_headers=header,
            stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "明天呢？"}]))
        refused = http.post("/v1/chat/completions", headers=header, json={
            "model": "scripted", "stream": True, "stream_options": {"include_usage": "yes"},
            "messages": [{"role": "user", "content": "后天呢？"}]})
    assert all(chunk.usage is None and chunk.choices for chunk in plain)
    assert plain[-1].choices[0].finish_reason == "stop"
    *reply, last = asked
    assert all(chunk.usage is None and chunk.choices for chunk in reply)
    assert reply[-1].choices[0].finish_reason == "stop"
    assert last.choices == [] and last.usage is not None
    assert last.usage.prompt_tokens > 0 and last.usage.completion_tokens > 0
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "stream_options"


STREAMS = 45
"""More streams than anyio's default thread pool has threads (40)."""


def test_streams_waiting_on_a_stalled_model_leave_the_other_endpoints_answering(
        chat_server: ChatServer, db_path: Path) -> None:
    """Each waiting stream held a thread of the event loop's pool while it waited for the
    model's next piece: 40 of them, and /v1/models (run on that pool) waited until the model
    answered (57 s in the report)."""
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(db_path))
    chat_server.plan = ["slow"] * STREAMS  # the first word, then nothing until released
    replies: dict[int, str] = {}

    def stream(n: int) -> None:
        with httpx.stream("POST", f"{running.base_url}/chat/completions", timeout=HANG,
                          headers={"X-Chatmem-Conversation": quote(f"对话{n}")},
                          json={"model": "test-small", "stream": True,
                                "messages": [{"role": "user", "content": f"第{n}个问题"}]}
                          ) as response:
            replies[n] = response.read().decode()

    with RunningProxy(settings, strategy="window") as running:
        streams = [threading.Thread(target=stream, args=(n,)) for n in range(STREAMS)]
        try:
            for thread in streams:
                thread.start()
            wait_until(lambda: len(chat_server.requests) == STREAMS,
                       "every stream waits on the model")
            listed = httpx.get(f"{running.base_url}/models", timeout=HANG)
            waiting = sum(thread.is_alive() for thread in streams)
        finally:
            chat_server.release.set()
            for thread in streams:
                thread.join(HANG)
    assert listed.status_code == 200
    assert "test-small" in [model["id"] for model in listed.json()["data"]]
    assert waiting == STREAMS  # it was answered while they all waited
    assert len(replies) == STREAMS
    assert all("Hello from the test server." in "".join(
        json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
        for line in reply.splitlines()
        if line.startswith("data: {") and json.loads(line[6:]).get("choices"))
        for reply in replies.values())


def test_a_turn_that_waited_for_another_process_write_is_said_in_the_server_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An OpenAI client has no place for the wait; the store told it to the conversation's
    kept workspace, which no listener hears, and it was never said anywhere."""
    import sqlite3
    from contextlib import closing

    from chatmem.store import sqlite_backend

    db = tmp_path / "h.db"
    settings = Settings(provider="scripted", db=str(db))
    header = {"X-Chatmem-Conversation": quote("等待")}
    holding, waited = threading.Event(), threading.Event()
    told = sqlite_backend.WaitingForWrite

    def waiting(*args: Any, **kwargs: Any) -> Any:
        waited.set()
        return told(*args, **kwargs)

    # Seen, not timed: the lock held a fixed 1.5 s was let go before a turn on a loaded
    # machine reached its write (and waited past the first 500 ms), and the test failed.
    monkeypatch.setattr(sqlite_backend, "WaitingForWrite", waiting)

    def hold() -> None:
        with closing(sqlite3.connect(db, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")
            holding.set()
            waited.wait(HANG)  # held until the turn waits for it
            other.execute("COMMIT")

    with RunningProxy(settings, strategy="window") as running:
        def ask(text: str) -> None:
            answer = httpx.post(f"{running.base_url}/chat/completions", headers=header,
                                timeout=HANG, json={"model": "scripted", "messages": [
                                    {"role": "user", "content": text}]})
            assert answer.status_code == 200, answer.text

        ask("一")
        held = threading.Thread(target=hold)
        held.start()
        assert holding.wait(10)
        try:
            ask("二")
        finally:
            waited.set()  # a turn that ended without waiting lets it go too
            held.join()
        ask("三")
    assert running.logged == [
        "等待: waited for another process's write to the history (a long import)"]


def test_the_upkeep_a_request_leaves_compiles_no_pattern_the_idle_server_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The upkeep after each stored turn compiled the patterns no request had used yet, on
    the conversation's thread: a client chaining its requests to a fresh server waited for
    it (requests 2-4 0.1-0.3 s each, 11-29 ms without). The server's own thread compiles
    them once no call has run for a while (chatmem.app.idle_upkeep.QUIET)."""
    import importlib.util

    from chatmem.engine.upkeep import MemoryUpkeep
    from chatmem.lazy_patterns import lazy

    if importlib.util.find_spec("chatmem.app.idle_upkeep") is not None:
        from chatmem.app import idle_upkeep

        monkeypatch.setattr(idle_upkeep, "QUIET", HANG * 10)  # not during the requests
    unused = lazy("(?:" + "|".join(f"未用的模式{i}号" for i in range(400)) + ")")  # longest
    upkept = threading.Semaphore(0)
    between_turns = MemoryUpkeep.between_turns

    def counted(engine: MemoryUpkeep, **how: bool) -> None:
        between_turns(engine, **how)
        upkept.release()

    monkeypatch.setattr(MemoryUpkeep, "between_turns", counted)
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"))
    with TestClient(build_app(settings, strategy="retrieval")) as http:
        header = {"X-Chatmem-Conversation": quote("链式")}
        for said in ("我们下周三去杭州", "my order ORD-7 ships to Porto"):
            answer = http.post("/v1/chat/completions", headers=header, json={
                "model": "scripted", "messages": [{"role": "user", "content": said}]})
            assert answer.status_code == 200
            assert upkept.acquire(timeout=HANG)
            assert unused._compiled is None  # type: ignore[attr-defined]
        proxy_idle = [t for t in threading.enumerate() if t.name == "chatmem-idle-upkeep"]
        assert proxy_idle  # the server's idle thread, waiting
        monkeypatch.setattr(idle_upkeep, "QUIET", 0.0)
        http.get("/v1/models")  # not a conversation's call: nothing to wake it
        answer = http.post("/v1/chat/completions", headers=header, json={
            "model": "scripted", "messages": [{"role": "user", "content": "好的"}]})
        assert answer.status_code == 200
        wait_until(lambda: unused._compiled is not None,  # type: ignore[attr-defined]
                   "the idle server compiles what no request used")


def test_an_error_in_the_idle_upkeep_is_one_line_in_the_servers_log_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A step of the idle upkeep that raised (here a pattern that does not compile) ended
    its thread with Python's traceback on stderr, from threading's hook, amid the server's
    log. The server's log gets one line naming the error, and the server answers on."""
    from chatmem import lazy_patterns
    from chatmem.app import idle_upkeep

    hooked: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: hooked.append(args.exc_value))
    monkeypatch.setattr(idle_upkeep, "QUIET", 0.0)
    broken = lazy_patterns.lazy("(未闭合" + "x" * 5000)  # the longest: compiled first
    said: list[str] = []
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"))
    try:
        with TestClient(build_app(settings, strategy="window", log=said.append)) as http:
            header = {"X-Chatmem-Conversation": quote("维护")}
            for text in ("第一句", "second"):
                answer = http.post("/v1/chat/completions", headers=header, json={
                    "model": "scripted", "messages": [{"role": "user", "content": text}]})
                assert answer.status_code == 200
                wait_until(lambda: said or hooked, "the upkeep's error is told")
    finally:
        with lazy_patterns._pending_lock:
            for kept in (lazy_patterns._pending, lazy_patterns._made):
                if broken in kept:
                    kept.remove(broken)  # type: ignore[arg-type]
    assert hooked == []
    assert len(said) == 1 and said[0].startswith(
        "the idle upkeep stopped after an error (error: missing ), unterminated subpattern")
    assert "\n" not in said[0]
