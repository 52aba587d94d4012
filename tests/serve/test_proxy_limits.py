"""What `chatmem serve` refuses before it reads, parses or counts a request whole: a body
larger than any model's context holds, and a message that cannot fit the budget."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import ChatServer
from waiting import HANG

pytest.importorskip("uvicorn", reason="chatmem[serve] is not installed")

import httpx2 as httpx
from test_proxy import RunningProxy, statuses

from chatmem.config.settings import Settings
from chatmem.serve.requests import MAX_BODY_BYTES


@pytest.fixture
def settings(chat_server: ChatServer, db_path: Path) -> Settings:
    return Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                    db=str(db_path), context_budget=1000)


def test_a_body_larger_than_any_context_is_refused_before_it_is_read(
        settings: Settings, chat_server: ChatServer, db_path: Path) -> None:
    """A 60 MB body was read whole, parsed and tokenized: 52 s and 2.4 GB before its 400."""
    body = json.dumps({"model": "test-small", "messages": [
        {"role": "user", "content": "中文" * (MAX_BODY_BYTES // 4)}]}, ensure_ascii=False)
    sent = body.encode()
    assert len(sent) > MAX_BODY_BYTES

    def chunked() -> Iterator[bytes]:  # no Content-Length: found while it streams in
        for start in range(0, len(sent), 2**20):
            yield sent[start:start + 2**20]

    with RunningProxy(settings) as running:
        for content in (sent, chunked()):
            answer = httpx.post(f"{running.base_url}/chat/completions", content=content,
                                timeout=HANG, headers={"X-Chatmem-Conversation": "big"})
            assert answer.status_code == 413, answer.text
            assert answer.json()["error"]["param"] == "messages"
        # The server goes on answering, on the same port.
        assert httpx.get(f"{running.base_url}/models", timeout=HANG).status_code == 200
    assert chat_server.requests == [] and statuses(db_path, "big") is None


def test_a_message_too_long_for_the_budget_is_refused_without_waiting_for_the_conversation(
        settings: Settings, chat_server: ChatServer, db_path: Path) -> None:
    """Its tokens were counted (seconds for megabytes) inside the conversation's turn, so
    it waited for the turn under way before it was refused: now its bytes alone say it
    cannot fit, and it is refused at once, while the model still holds the other reply."""
    chat_server.plan = ["slow"]
    headers = {"X-Chatmem-Conversation": "长文"}

    with RunningProxy(settings) as running:
        url = f"{running.base_url}/chat/completions"
        held = threading.Thread(target=lambda: httpx.post(url, timeout=HANG, json={
            "model": "test-small", "messages": [{"role": "user", "content": "讲个故事"}]},
            headers={k: v.encode() for k, v in headers.items()}))
        held.start()
        try:
            assert chat_server.first_delta_sent.wait(HANG)
            answer = httpx.post(url, timeout=HANG, json={
                "model": "test-small", "stream": True,
                "messages": [{"role": "system", "content": "简短回答。"},
                             {"role": "user", "content": "长" * 90_000}]},
                headers={k: v.encode() for k, v in headers.items()})
            # Answered while the held turn is under way, not once it has ended (stored).
            assert statuses(db_path, "长文") in (None, [])
        finally:
            chat_server.release.set()
            held.join(HANG)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "messages" and "1,000" in error["message"]
    assert len(chat_server.requests) == 1  # only the held one reached the model
    assert statuses(db_path, "长文") == ["ok"]


def _gzipped(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, compresslevel=1)


def test_a_compressed_body_is_inflated_and_its_inflated_size_held_to_the_cap(
        settings: Settings, chat_server: ChatServer, db_path: Path) -> None:
    """`Content-Encoding: gzip` got "400 the body is not JSON"; inflated, it is counted
    against the 16 MiB cap as it inflates, so a zip bomb is a 413 long before it is whole."""
    import resource
    import zlib

    def request(content: str) -> bytes:
        return json.dumps({"model": "test-small", "messages": [
            {"role": "user", "content": content}]}, ensure_ascii=False).encode()

    first = request("压缩的问题")
    half = len(first) // 2
    bodies = {"gzip": _gzipped(first),
              "deflate": zlib.compress(first),
              # `cat a.gz b.gz`: two members, one body
              "x-gzip": _gzipped(first[:half]) + _gzipped(first[half:])}
    # 256 MiB of one letter is 256 KB of gzip; inflated whole, it would be 256 MiB.
    squeezed = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = [squeezed.compress(b'{"model": "test-small", "messages": [{"role": "user", '
                              b'"content": "')]
    bomb += [squeezed.compress(b"a" * 2**20) for _ in range(256)]
    bomb.append(squeezed.compress(b'"}]}') + squeezed.flush())
    with RunningProxy(settings) as running:
        url = f"{running.base_url}/chat/completions"
        for n, (coding, body) in enumerate(bodies.items()):
            answer = httpx.post(url, content=body, timeout=HANG, headers={
                "Content-Encoding": coding, "Content-Type": "application/json",
                "X-Chatmem-Conversation": f"gz{n}"})
            assert answer.status_code == 200, (coding, answer.text)
            assert statuses(db_path, f"gz{n}") == ["ok"]
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        answer = httpx.post(url, content=b"".join(bomb), timeout=HANG, headers={
            "Content-Encoding": "gzip", "X-Chatmem-Conversation": "bomb"})
        assert answer.status_code == 413, answer.text
        assert "once inflated" in answer.json()["error"]["message"]
        # kilobytes: the peak rose by no more than about the cap's worth
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 2**10
        refused = {"br": 415, "gzip, gzip": 415, "compress": 415}
        for coding, status in refused.items():
            answer = httpx.post(url, content=bodies["gzip"], timeout=HANG, headers={
                "Content-Encoding": coding, "X-Chatmem-Conversation": "odd"})
            assert answer.status_code == status, (coding, answer.text)
            assert answer.json()["error"]["param"] == "Content-Encoding"
            assert f"Content-Encoding {coding!r} is not read here" in answer.json()[
                "error"]["message"]
        for broken in (bodies["gzip"][:-5], first, bodies["gzip"] + b"junk"):
            answer = httpx.post(url, content=broken, timeout=HANG, headers={
                "Content-Encoding": "gzip", "X-Chatmem-Conversation": "odd"})
            assert answer.status_code == 400, answer.text
            assert answer.json()["error"]["message"] == (
                "the body is not whole gzip data, as its Content-Encoding says")
    assert statuses(db_path, "bomb") is None and statuses(db_path, "odd") is None
    assert len(chat_server.requests) == 3


def test_raw_deflate_and_padded_gzip_are_read_and_a_body_of_many_members_refused(
        settings: Settings, chat_server: ChatServer, db_path: Path) -> None:
    """Raw deflate (no zlib header, as some clients send `deflate`) and a gzip body with zero
    padding after it (gunzip and Python's gzip read both) were "not whole" 400s; 200,000 empty
    gzip members in a 4 MB body were each inflated (a new inflater and a copy of the rest of
    the piece per member) before the answer."""
    import gzip
    import zlib

    body = json.dumps({"model": "test-small", "messages": [
        {"role": "user", "content": "原始压缩的问题"}]}, ensure_ascii=False).encode()
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    raw_deflate = raw.compress(body) + raw.flush()
    tenth = len(body) // 10
    read = {
        "deflate": [raw_deflate, iter([raw_deflate[:1], raw_deflate[1:2], raw_deflate[2:]]),
                    zlib.compress(body)],
        "gzip": [_gzipped(body) + bytes(512), _gzipped(body[:tenth]) + bytes(7)
                 + _gzipped(body[tenth:]),
                 b"".join(_gzipped(body[start:start + tenth])
                          for start in range(0, len(body), tenth))]}
    assert len(read["gzip"][2]) > len(_gzipped(b"")) * 10
    refused = {"deflate": [raw_deflate + b"junk", zlib.compress(body) + bytes(4)],
               "gzip": [gzip.compress(b"") * 17 + _gzipped(body),
                        gzip.compress(b"") * 200_000]}
    with RunningProxy(settings) as running:
        url = f"{running.base_url}/chat/completions"
        n = 0
        for coding, contents in read.items():
            for content in contents:
                n += 1
                answer = httpx.post(url, content=content, timeout=HANG, headers={
                    "Content-Encoding": coding, "X-Chatmem-Conversation": f"z{n}"})
                assert answer.status_code == 200, (coding, n, answer.text)
                assert statuses(db_path, f"z{n}") == ["ok"]
        for coding, contents in refused.items():
            for content in contents:
                answer = httpx.post(url, content=content, timeout=HANG, headers={
                    "Content-Encoding": coding, "X-Chatmem-Conversation": "odd"})
                assert answer.status_code == 400, (coding, answer.text)
                assert answer.json()["error"]["param"] == "Content-Encoding"
                assert answer.json()["error"]["message"] == (
                    "the body is more than 16 gzip members one after the other: compress it "
                    "as one" if coding == "gzip"
                    else "the body is not whole deflate data, as its Content-Encoding says")
    assert statuses(db_path, "odd") is None
    assert len(chat_server.requests) == n
