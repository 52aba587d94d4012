"""A small OpenAI-compatible chat server on 127.0.0.1 for tests: real HTTP, real SSE.

Each request pops the next behaviour from `plan` ("ok" when empty) and is
recorded in `requests` with its JSON body (and in `paths` with its path and
query), so a test can compare what the server received with what chatmem says
it sent. `/v1/embeddings` answers with small deterministic vectors; a POST to
any other path than these two is a 404, as a real server's would be.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from waiting import HANG

CAP_FIELDS = ("max_tokens", "max_completion_tokens")


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.plan: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        """Each request's path and query as sent (`/v1/chat/completions?api-key=…`)."""
        self.headers_seen: list[dict[str, str]] = []
        self.first_delta_sent = threading.Event()
        self.release = threading.Event()
        self.hung_up = threading.Event()
        """A client hung up on a reply streamed until it does (`drip`, `keepalive`)."""
        self.reply_words = ["Hello", " from", " the", " test", " server."]
        self.usage: Any = None
        """What a reply reports as its `usage` instead of its counts (a broken server's)."""
        self.vectors: list[Any] | None = None
        """What /v1/embeddings answers instead of its vectors, one per input (a broken
        endpoint's: NaN, rows of different lengths)."""
        self.piece = "x" * (1 << 20)
        """The one piece `big-piece` streams, whatever max_tokens says."""
        self.piece_goes = threading.Event()
        """`big-piece-then-drip` sends its piece once this is set (it is, unless a test
        clears it to act while the request waits on the model)."""
        self.piece_goes.set()
        self.bytes_sent = 0
        """Body bytes `endless-line` sent before the client hung up (or it gave up)."""
        self.retry_after = ""
        """The Retry-After header of `429-retry-at` (an HTTP date, say)."""
        self.thoughts = ["Let me think", " about it", " once more."]
        """What `thinking` streams as the model's reasoning before its reply."""
        self.think_every = 0.0
        """Seconds `thinking` takes over each piece of its reasoning."""
        self.thinks_until_released = False
        """`thinking` goes on thinking after its thoughts (sending nothing) until `release`
        is set: a reasoning model that takes as long as the test needs."""
        self.models = ["test-small", "test-large"]
        """What GET /v1/models lists."""
        self.refuses: str | None = None
        """A field every chat request holding it is refused for with a 400 naming it: a
        reply-cap field's names the other, as OpenAI refuses max_tokens for its reasoning
        models."""
        self.refused_as: tuple[str, str] | None = None
        """What that 400 says instead (its message and `param`); `{key}` in either is the
        request's Authorization header, as a gateway that quotes it back."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-reply (cut, cap, timeout) is what a fault test
        # does on purpose; the server's own traceback must not look like chatmem's.
        pass

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


_ERRORS: dict[str, tuple[int, str, str, dict[str, str]]] = {
    # mode: (status, error code, message, headers); retry hints short so retries are quick.
    "401": (401, "invalid_api_key", "Incorrect API key provided: sk-test-****", {}),
    "403-region": (403, "unsupported_country_region_territory",
                   "Country, region, or territory not supported", {}),
    "429": (429, "rate_limit_exceeded", "Rate limit reached", {"retry-after-ms": "10"}),
    "429-retry-after": (429, "rate_limit_exceeded", "Rate limit reached", {"retry-after": "1"}),
    "429-quota": (429, "insufficient_quota", "You exceeded your current quota, please check"
                  " your plan and billing details.", {"retry-after-ms": "10"}),
    "429-wait-a-day": (429, "rate_limit_exceeded", "Rate limit reached for requests per day",
                       {"retry-after": "86400"}),
    "500": (500, "server_error", "The server had an error", {"retry-after-ms": "10"}),
    "503": (503, "overloaded", "The server is overloaded", {"retry-after-ms": "10"}),
    # A gateway's: the model behind it may have the request, or be answering it still.
    "502": (502, "bad_gateway", "Bad gateway", {"retry-after-ms": "10"}),
    "504": (504, "gateway_timeout", "Gateway timeout", {"retry-after-ms": "10"}),
    # A 404 for the path, not the model (a base_url missing its /v1, a gateway's route).
    "404-path": (404, "not_found", "no route /chat/completions", {}),
    # Ollama's words for a model it does not have: no model_not_found code.
    "404-ollama": (404, "api_error", 'model "qwen2:7b" not found, try pulling it first', {}),
    "500-internal": (500, "server_error", "vLLM at http://10.0.0.7:9000/internal/llm failed",
                     {"retry-after-ms": "10"}),
}
"""Plans that answer with a fixed OpenAI-style error."""


class _Handler(BaseHTTPRequestHandler):
    server: ChatServer
    protocol_version = "HTTP/1.1"
    # Each write goes out at once, as a real server's does: with Nagle's algorithm on, the
    # body written after the headers waited for the client's delayed ACK, about 40 ms per
    # request on a kept-alive connection (an eval embedding long-chat made 362 of them).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def route(self) -> str:
        """The path without its query."""
        return urlsplit(self.path).path

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        self.server.headers_seen.append(dict(self.headers))
        mode = self.server.plan.pop(0) if self.server.plan else "ok"
        if mode in _ERRORS:
            self._error(*_ERRORS[mode])
        elif self.route.rstrip("/").endswith("/models"):
            self._body(200, "application/json", json.dumps({"object": "list", "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "test"}
                for name in self.server.models]}).encode())
        else:
            self._error(404, "not_found", f"no route {self.path}")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.paths.append(self.path)
        self.server.requests.append(body)
        self.server.headers_seen.append(dict(self.headers))
        if not self.route.endswith(("/chat/completions", "/embeddings")):
            # A client that built its URL wrong (a base URL's query glued before the path).
            self._error(404, "not_found", f"no route {self.route}")
            return
        refused = self.server.refuses
        if refused and refused in body and refused in CAP_FIELDS:
            # As OpenAI answers max_tokens for a reasoning model (o1, o3, gpt-5).
            other = ({*CAP_FIELDS} - {refused}).pop()
            self._error(400, "unsupported_parameter",
                        f"Unsupported parameter: '{refused}' is not supported "
                        f"with this model. Use '{other}' instead.", param=refused)
            return
        if refused and refused in body and self.server.refused_as is not None:
            said, param = (text.replace("{key}", self.headers.get("Authorization", ""))
                           for text in self.server.refused_as)
            self._error(400, "unsupported_parameter", said, param=param)
            return
        if refused and refused in body:
            # As OpenAI answers a field a model does not take (reasoning_effort on gpt-4o).
            self._error(400, "unsupported_parameter",
                        f"Unsupported parameter: '{refused}' is not supported with this "
                        f"model (sent {body[refused]!r}).", param=refused)
            return
        mode = self.server.plan.pop(0) if self.server.plan else "ok"
        if mode in _ERRORS:
            self._error(*_ERRORS[mode])
        elif mode == "moved-301":
            # As a server moved elsewhere answers (nginx's http:// to https://, say).
            self._body(301, "text/html", b"<html>Moved Permanently</html>",
                       {"Location": "/v2/chat/completions"})
        elif mode == "429-retry-at":
            self._error(429, "rate_limit_exceeded", "Rate limit reached",
                        {"retry-after": self.server.retry_after})
        elif mode == "echo-key":
            # Some servers quote the request back in their error message.
            self._error(400, "bad_request", f"rejected header {self.headers['Authorization']}")
        elif mode == "echo-key-base64":
            # ... or quote the key base64-encoded, as some gateways log a header.
            key = self.headers["Authorization"].split()[-1]
            self._error(400, "bad_request",
                        f"bad credential {base64.b64encode(key.encode()).decode()}")
        elif mode == "echo-key-url":
            # ... or in a URL's query, percent-encoded, as a gateway names where it failed.
            key = self.headers["Authorization"].split()[-1]
            every = "".join(c if c.isalnum() else f"%{ord(c):02X}" for c in key)
            self._error(400, "bad_request", f"upstream http://10.0.0.7/v1?keyurl={every} failed")
        elif mode == "echo-key-reply":
            # A 200 reply quoting the Authorization header, split over several deltas.
            header = self.headers["Authorization"]
            self._stream_head()
            for piece in ("Your header was ", header[:10], header[10:19], header[19:],
                          "; once more: ", header.split()[-1], "."):
                self._event(self._chunk(body, piece, None))
            self._event(self._chunk(body, None, "stop"))
            self._event("[DONE]")
            self._end()
        elif mode == "echo-key-disguised":
            # A hostile server echoing the key so that a plain match misses it: a zero-width
            # space inside, in full-width letters, wrapped over two lines (split over deltas).
            key = self.headers["Authorization"].split()[-1]
            wide = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in key)
            self._stream_head()
            for piece in ("one ", key[:6], "\u200b", key[6:], " two ", wide[:9], wide[9:],
                          " three ", key[:11], "\n", key[11:], " 四。"):
                self._event(self._chunk(body, piece, None))
            self._event(self._chunk(body, None, "stop"))
            self._event("[DONE]")
            self._end()
        elif mode == "echo-key-reformatted":
            # The key as a model reformats it when told to hide it: in groups of four, as
            # lowercase percent escapes, as hex bytes, struck through, split by a tab.
            key = self.headers["Authorization"].split()[-1]
            self._stream_head()
            for piece in ("1 ", " ".join(key[at:at + 4] for at in range(0, len(key), 4)),
                          " 2 ", "".join(c if c.isalnum() else f"%{ord(c):02x}" for c in key),
                          " 3 ", " ".join(f"{b:02x}" for b in key.encode()),
                          " 4 ", "".join(c + "\u0336" for c in key),
                          " 5 ", key[:9], "\t", key[9:], " 完。"):
                for at in range(0, len(piece), 7):
                    self._event(self._chunk(body, piece[at:at + 7], None))
            self._event(self._chunk(body, None, "stop"))
            self._event("[DONE]")
            self._end()
        elif mode == "echo-key-invisible":
            # The key with an invisible mark the folded reading once kept in it: a
            # left-to-right mark, a line separator, a NUL, a variation selector, a tag.
            key = self.headers["Authorization"].split()[-1]
            self._stream_head()
            for at, mark in enumerate(("\u200e", "\u2028", "\x00", "\ufe0f", "\U000e0041"),
                                      start=4):
                for piece in (f"{at} ", key[:at], mark, key[at:], " "):
                    self._event(self._chunk(body, piece, None))
            self._event(self._chunk(body, "完。", None))
            self._event(self._chunk(body, None, "stop"))
            self._event("[DONE]")
            self._end()
        elif mode == "404":
            self._error(404, "model_not_found", f"The model {body.get('model')} does not exist")
        elif mode == "hang":
            # Accepts the request and never answers (until the test ends).
            self.server.release.wait(HANG)
            self.close_connection = True
        elif mode == "html":
            self._body(200, "text/html; charset=utf-8",
                       b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>")
        elif mode in ("json", "json-logprobs"):
            # A server that ignores stream=True and answers once; with each token's 20 most
            # likely alternatives (-o logprobs/top_logprobs), ~2 KB of body a token.
            words = self.server.reply_words
            choice: dict[str, object] = {
                "index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "".join(words)}}
            if mode == "json-logprobs":
                choice["logprobs"] = {"content": [
                    {"token": w, "logprob": -0.1, "top_logprobs": [
                        {"token": f"{w}{n}", "logprob": -1.5 - n, "bytes": [120] * 8}
                        for n in range(20)]} for w in words]}
            self._body(200, "application/json", json.dumps({
                "id": "chatcmpl-test", "object": "chat.completion", "model": body["model"],
                "choices": [choice],
                "usage": {"prompt_tokens": 3, "completion_tokens": len(words)}
                if self.server.usage is None else self.server.usage,
            }).encode())
        elif mode == "invalid-json":
            self._stream_head()
            self._event(self._chunk(body, "Hel", None))
            self._event("{this is not json")
            self._end()
        elif mode == "not-utf8":
            self._stream_head()
            self._event(self._chunk(body, "Hel", None))
            self._raw(b'data: {"choices": [{"index": 0, "delta": {"content": "\xff\xfe"}}]}\n\n')
            self._end()
        elif mode == "error-event":
            # As vLLM, OpenRouter (and chatmem serve) say a failure once the reply began.
            self._stream_head()
            self._event(self._chunk(body, "Hel", None))
            self._event({"error": {"message": "the model ran out of memory",
                                   "type": "server_error", "code": 500}})
            self._end()
        elif mode == "number-content":
            self._stream_head()
            self._event(self._chunk(body, 5, None))
            self._end()
        elif mode == "empty-choices":
            self._stream_head()
            self._event({**self._chunk(body, None, None), "choices": []})
            self._event("[DONE]")
            self._end()
        elif mode == "empty-reply":
            self._stream_head()
            self._event(self._chunk(body, None, "stop"))
            self._event("[DONE]")
            self._end()
        elif mode == "huge":
            # 5 MB, ignoring max_tokens as a broken server would.
            self._stream_head()
            piece = "data " * 2000
            for _ in range(500):
                try:
                    self._event(self._chunk(body, piece, None))
                except OSError:  # the client stopped reading: that is the point
                    return
            self._event(self._chunk(body, None, "stop"))
            self._event("[DONE]")
            self._end()
        elif mode == "tool-calls":
            # A model (or a server's chat template) that calls a tool nobody offered.
            self._stream_head()
            call = {"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": "rm", "arguments": "{}"}}
            self._event({**self._chunk(body, None, None), "choices": [
                {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]})
            self._event(self._chunk(body, None, "tool_calls"))
            self._event("[DONE]")
            self._end()
        elif mode == "big-piece":
            # A server that ignores max_tokens and sends its whole reply in one piece.
            self._stream_head()
            self._event(self._chunk(body, self.server.piece, None))
            self._event(self._chunk(body, None, "stop"))
            self._event("[DONE]")
            self._end()
        elif mode == "big-piece-then-drip":
            # `piece`, then a drip of 3 characters every 10 ms for as long as the client
            # reads: a long reply still coming when its first piece is out.
            self.server.piece_goes.wait(HANG)
            self._stream_head()
            self._event(self._chunk(body, self.server.piece, None))
            self.server.first_delta_sent.set()
            self._until_hung_up(lambda: self._event(self._chunk(body, "abc", None)))
        elif mode in ("endless-line", "endless-json"):
            # A `data:` line (or a JSON answer) that never ends, 64 KB at a time; 64 MB at
            # most, so a client that never stops reading fails (and does not fill the test
            # machine's memory).
            if mode == "endless-line":
                self._stream_head()
                self._raw(b'data: {"choices": [{"index": 0, "delta": {"content": "')
            else:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self._raw(b'{"choices": [{"index": 0, "message": {"content": "')
            self.close_connection = True
            while self.server.bytes_sent < 64 << 20:
                try:
                    self._raw(b"x" * 65536)
                except OSError:  # the client stopped reading: that is the point
                    self.server.hung_up.set()
                    return
                self.server.bytes_sent += 65536
        elif mode == "keepalive":
            # 200 and the stream's head, then only SSE comments: no piece of a reply, ever.
            self._stream_head()
            self.server.first_delta_sent.set()
            self._until_hung_up(lambda: self._raw(b": keepalive\n\n"))
        elif mode == "drip":
            # A steady drip of 3 characters every 10 ms, for as long as the client reads.
            self._stream_head()
            self._until_hung_up(lambda: self._event(self._chunk(body, "abc", None)))
        elif mode == "refusal":
            # What OpenAI streams when the model refuses: `delta.refusal`, no content.
            self._stream_head()
            for piece in ("I'm sorry, ", "I can't help with that."):
                self._event({**self._chunk(body, None, None), "choices": [
                    {"index": 0, "delta": {"refusal": piece}, "finish_reason": None}]})
            self._event(self._chunk(body, None, "stop"))
            self._event("[DONE]")
            self._end()
        elif mode in ("thought-to-the-cap", "filtered-empty"):
            # A reasoning model that spent the whole cap thinking (reasoning_content, as
            # vLLM and llama.cpp stream it), or a content filter that stopped the reply
            # before any text.
            self._stream_head()
            self._event({**self._chunk(body, None, None), "choices": [
                {"index": 0, "delta": {"reasoning_content": "Let me think."},
                 "finish_reason": None}]})
            finish = "length" if mode == "thought-to-the-cap" else "content_filter"
            self._event(self._chunk(body, None, finish))
            self._event("[DONE]")
            self._end()
        elif mode in ("thinking", "thinking-as-reasoning"):
            # A reasoning model that thinks a while before its answer, streaming its
            # thoughts apart from the reply: `reasoning_content` (vLLM, llama.cpp's server,
            # DeepSeek) or `reasoning` (Ollama, OpenRouter), one piece every `think_every` s.
            field = "reasoning_content" if mode == "thinking" else "reasoning"
            self._stream_head()
            for thought in self.server.thoughts:
                self._event({**self._chunk(body, None, None), "choices": [
                    {"index": 0, "delta": {field: thought}, "finish_reason": None}]})
                time.sleep(self.server.think_every)
            if self.server.thinks_until_released:
                self.server.release.wait(HANG)
            self._stream(body, head=False)
        elif mode == "filtered":
            self._stream(body, finish="content_filter")
        elif mode == "cut":
            self._stream(body, cut=True)
        elif mode == "slow":
            self._stream(body, slow=True)
        elif mode == "no-usage":
            # As some servers stream (llama.cpp's older builds, proxies that drop it).
            self._stream(body, usage=False)
        elif mode == "finished-then-stall":
            # The whole reply and its usage, then no [DONE]: the connection stays open.
            self._stream(body, after_finish="stall")
        elif mode == "finished-then-drop":
            # The whole reply, then the connection drops before the usage and [DONE].
            self._stream(body, after_finish="drop")
        elif self.route.endswith("/embeddings"):
            self._embeddings(body)
        else:
            self._stream(body)

    def _until_hung_up(self, send: Any) -> None:
        """Call `send` every 10 ms until the client hangs up; after HANG seconds (a client
        that never gives up) the connection drops, so such a client fails, not hangs."""
        self.close_connection = True
        ends = time.monotonic() + HANG
        while not self.server.release.wait(0.01) and time.monotonic() < ends:
            try:
                send()
            except OSError:  # the client stopped reading: that is the point
                self.server.hung_up.set()
                return

    def _embeddings(self, body: dict[str, Any]) -> None:
        """/v1/embeddings: 8 numbers per input (its UTF-8 bytes counted by value mod 8),
        deliberately not unit length, listed in reverse order as servers may."""
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for index, text in enumerate(texts):
            vector = [0.0] * 8
            for byte in text.encode():
                vector[byte % 8] += 1.0
            if self.server.vectors is not None:
                vector = self.server.vectors[index % len(self.server.vectors)]
            data.append({"object": "embedding", "index": index, "embedding": vector})
        payload = json.dumps({"object": "list", "data": data[::-1], "model": body["model"],
                              "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        self._body(200, "application/json", payload)

    def _error(self, status: int, code: str, message: str,
               headers: dict[str, str] | None = None, param: str | None = None) -> None:
        data = json.dumps({"error": {"message": message, "type": code, "code": code,
                                     "param": param}}).encode()
        self._body(status, "application/json", data, headers)

    def _body(self, status: int, kind: str, data: bytes,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream_head(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _end(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _event(self, data: Any) -> None:
        payload = data if isinstance(data, str) else json.dumps(data)
        self._raw(f"data: {payload}\n\n".encode())

    def _raw(self, chunk: bytes) -> None:
        """One HTTP chunk of the event stream."""
        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        """The connection drops mid-stream: half an HTTP chunk, no final chunk, no [DONE]."""
        self.close_connection = True
        self.wfile.write(b"7\r\ndata: {")
        self.wfile.flush()
        self.connection.shutdown(2)

    def _chunk(self, body: dict[str, Any], content: Any, finish: str | None) -> dict:
        delta = {"content": content} if content is not None else {}
        return {
            "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def _stream(self, body: dict[str, Any], cut: bool = False, slow: bool = False,
                usage: bool = True, finish: str = "stop",
                after_finish: str | None = None, head: bool = True) -> None:
        if head:
            self._stream_head()
        words = self.server.reply_words
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        if limit and len(words) > limit:
            # As a real server does: stop at the cap and say so.
            words, finish = words[:limit], "length"
        for i, word in enumerate(words):
            self._event(self._chunk(body, word, None))
            if i == 0:
                self.server.first_delta_sent.set()
                if slow:
                    # Hold the reply open until the test has interrupted the client
                    # (and released it), however long a busy machine takes to get there.
                    self.server.release.wait(HANG)
            if cut and i == 1:
                self._drop()
                return
        self._event(self._chunk(body, None, finish))
        if after_finish == "drop":
            self._drop()
            return
        prompt = sum(len(_text_of(m["content"]).split()) for m in body["messages"])
        if usage:
            self._event({**self._chunk(body, None, None), "choices": [],
                         "usage": {"prompt_tokens": prompt, "completion_tokens": len(words),
                                   "total_tokens": prompt + len(words)}
                         if self.server.usage is None else self.server.usage})
        if after_finish == "stall":
            self.close_connection = True
            self.server.release.wait(HANG)
            return
        self._event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


@contextmanager
def running_chat_server() -> Iterator[ChatServer]:
    from chatmem.providers.listings import forget_listings

    server = ChatServer()
    # A port an earlier test's server had: what that one listed is no longer so.
    forget_listings()
    # A short poll: shutdown() waits for the loop to notice, up to one poll interval.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


def _text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of OpenAI content parts (images)."""
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content if part.get("type") == "text")
