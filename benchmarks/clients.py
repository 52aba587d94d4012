"""What chatmem costs a client that reaches it over the network: `chatmem serve`'s added
latency per request, and `chatmem mcp`'s tool latency, on histories of N turns.

  proxy   the same streamed chat request sent straight to an OpenAI-compatible upstream
          (a small local server that answers at once, so the figure is chatmem's own cost)
          and through `chatmem serve` (in this process, on a port of its own, real HTTP):
          time to the first byte of the reply and to its end, median and p95 over R
          requests, alternated, with the difference (what the proxy adds: reading the
          request, building the context, storing the turn)
  mcp     `get_context`, `record_turn` and `search_memory` (in one conversation and
          across all) called through the mcp SDK's client on a `chatmem mcp` subprocess
          (stdio), median and p95
  request time to the first piece of a streamed reply from the same upstream for a
          context of 2 / 36 / 72 messages, sent by chatmem's openai provider and by the
          openai client's `chat.completions.create` (what an app, or LangChain's
          ChatOpenAI, calls), alternated: what building a request costs per message

The conversation's strategy is `window` unless `--strategy` names another (`retrieval`
recalls with the deterministic `hash` embedder, every message embedded beforehand, as
`chatmem index` leaves a history).

Run from the repository root (needs chatmem[serve]):

    python benchmarks/clients.py                 # 100 and 10,000 turns, 30 requests each
    python benchmarks/clients.py --turns 100 --requests 10
    python benchmarks/clients.py --strategy retrieval --turns 1000 10000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from workloads import percentile, serving

REPLY = ["Noted", ", ", "thanks", "."]


class Upstream(ThreadingHTTPServer):
    """An OpenAI-compatible chat server that streams a four-piece reply at once."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client closing its kept-alive connection at the end is not news

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def event(data: Any) -> None:
            line = f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")

        for piece in REPLY:
            event({"id": "x", "object": "chat.completion.chunk", "model": body["model"],
                   "choices": [{"index": 0, "delta": {"content": piece},
                                "finish_reason": None}]})
        event({"id": "x", "object": "chat.completion.chunk", "model": body["model"],
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        event({"id": "x", "object": "chat.completion.chunk", "model": body["model"],
               "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 4}})
        event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def build_history(db: Path, turns: int, strategy: str = "window") -> None:
    from chatmem.embeddings.hashed import HashEmbedder
    from chatmem.memory.indexing import Indexing
    from chatmem.store import Store

    with Store(db) as store:
        session = store.sessions.create_session("bench", strategy, {}, provider="openai",
                                                model="bench", system="Be brief.", user="default")
        messages = []
        for n in range(turns):
            messages.append({"role": "user", "content": f"Turn {n}: my locker {n % 97} is "
                                                        f"near the window, order ORD-{n}."})
            messages.append({"role": "assistant", "content": f"Noted, locker {n % 97}."})
        for start in range(0, len(messages), 2000):
            store.history.import_messages(session.id, messages[start:start + 2000])
        Indexing(store, session.id, background=False).finish(HashEmbedder())


HASH_CONFIG = '[embeddings]\nprovider = "hash"\n'
"""The embedder every measured process recalls with (the `hash` one: no model to load)."""


def timed_stream(client: Any, headers: dict[str, str]) -> tuple[float, float]:
    started = time.perf_counter()
    first = None
    stream = client.chat.completions.create(
        model="bench", stream=True, extra_headers=headers,
        messages=[{"role": "user", "content": "Which locker is near the window?"}])
    for chunk in stream:
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter()
    end = time.perf_counter()
    return ((first or end) - started) * 1000, (end - started) * 1000


def stats(values: list[float]) -> tuple[float, float]:
    """Median and p95, the p95 as benchmarks/run.py takes it (comparable across tables)."""
    return statistics.median(values), percentile(values, 0.95)


def measure_proxy(turns: int, requests: int, upstream: Upstream,
                  strategy: str = "window") -> dict[str, Any]:
    from openai import OpenAI

    from chatmem.config.sections import EmbeddingsSection
    from chatmem.config.settings import Settings

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "h.db"
        build_history(db, turns, strategy)
        settings = Settings(provider="openai", base_url=upstream.base_url, model="bench",
                            db=str(db), embeddings=EmbeddingsSection(provider="hash"))
        with serving(settings) as served:
            direct = OpenAI(base_url=upstream.base_url, api_key="x", max_retries=0)
            proxied = OpenAI(base_url=f"{served}/v1", api_key="x", max_retries=0)
            header = {"X-Chatmem-Conversation": "bench"}
            timed_stream(proxied, header)  # the first request opens the model and the file
            rows: dict[str, list[tuple[float, float]]] = {"direct": [], "proxy": []}
            for _ in range(requests):
                rows["direct"].append(timed_stream(direct, {}))
                rows["proxy"].append(timed_stream(proxied, header))
    out: dict[str, Any] = {"turns": turns}
    for name, values in rows.items():
        out[name] = {"first_ms": stats([v[0] for v in values]),
                     "total_ms": stats([v[1] for v in values])}
    return out


MCP_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "get_context": ("get_context", {"conversation_id": "bench", "input": "locker?"}),
    "record_turn": ("record_turn", {"conversation_id": "bench", "user": "My locker is 12.",
                                    "assistant": "Noted, locker 12."}),
    "search (one)": ("search_memory", {"query": "locker of ORD-77",
                                       "conversation_id": "bench"}),
    "search (all)": ("search_memory", {"query": "locker of ORD-77"}),
}
"""Each MCP tool call timed: (tool, arguments), by the column it is shown in."""


def measure_mcp(turns: int, requests: int, strategy: str = "window") -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run(db: Path) -> dict[str, list[float]]:
        # The whole environment, from the history's folder: code on PYTHONPATH (another
        # checkout) is what serves, not a chatmem/ in the folder the benchmark runs from.
        config = db.parent / "config.toml"
        config.write_text(HASH_CONFIG, encoding="utf-8")
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "chatmem", "mcp", "--db", str(db), "--provider", "scripted"],
            env={**os.environ, "CHATMEM_CONFIG": str(config)}, cwd=db.parent)
        times: dict[str, list[float]] = {label: [] for label in MCP_CALLS}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            for label, (tool, arguments) in MCP_CALLS.items():
                await s.call_tool(tool, arguments)  # warm: modules imported, file opened
                for _ in range(requests):
                    started = time.perf_counter()
                    result = await s.call_tool(tool, arguments)
                    times[label].append((time.perf_counter() - started) * 1000)
                    assert not result.is_error, result.content
                    if tool == "search_memory":
                        # A search of words every message holds found nothing at 10,000
                        # turns and timed an empty answer: these find the turn they name.
                        assert (result.structured_content or {}).get("hits"), (label, turns)
        return times

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "h.db"
        build_history(db, turns, strategy)
        times = asyncio.run(run(db))
    return {"turns": turns, **{tool: stats(values) for tool, values in times.items()}}


def context_of(size: int) -> list[dict[str, str]]:
    """A context of `size` messages: the system prompt, then turns of a long chat."""
    turns = [{"role": "user" if i % 2 == 0 else "assistant",
              "content": f"(8 May 2023) Caroline: turn {i}, my locker {i % 97} is near the"
                         f" window, order ORD-{i}. 我们五月去杭州旅行，预算五千元。"}
             for i in range(size - 1)]
    return [{"role": "system", "content": "Be brief."}, *turns]


def measure_request(upstream: Upstream, sizes: list[int], requests: int) -> list[dict[str, Any]]:
    from openai import OpenAI

    from chatmem.providers.openai import OpenAIProvider

    provider = OpenAIProvider("bench", base_url=upstream.base_url, api_key="x", max_retries=0)
    client = OpenAI(base_url=upstream.base_url, api_key="x", max_retries=0)

    def first_piece(messages: list[dict[str, str]], by: str) -> float:
        started = time.perf_counter()
        if by == "chatmem":
            reply = iter(provider.stream(messages))
            next(piece for piece in reply if piece)  # past the empty one: it is answering
            first = time.perf_counter()
            list(reply)  # read to the end, as the client below does
            return (first - started) * 1000
        stream = client.chat.completions.create(model="bench", messages=messages,  # type: ignore[arg-type]
                                                stream=True,
                                                stream_options={"include_usage": True})
        first = None
        for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter()
        return ((first or time.perf_counter()) - started) * 1000

    rows = []
    for size in sizes:
        messages = context_of(size)
        times: dict[str, list[float]] = {"chatmem": [], "openai": []}
        for by in times:
            first_piece(messages, by)  # warm: a connection open, types imported
        for _ in range(requests):
            for by, values in times.items():
                values.append(first_piece(messages, by))
        rows.append({"messages": size, **{by: stats(values) for by, values in times.items()}})
    provider.close()
    client.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 10_000])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--strategy", default="window",
                        help="the conversation's memory strategy (default: window)")
    args = parser.parse_args()
    upstream = Upstream()
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    proxy_rows = [measure_proxy(n, args.requests, upstream, args.strategy) for n in args.turns]
    mcp_rows = [measure_mcp(n, args.requests, args.strategy) for n in args.turns]
    request_rows = measure_request(upstream, [2, 36, 72], args.requests)
    upstream.shutdown()
    print(f"strategy: {args.strategy}")
    print("proxy: one streamed request, ms (median / p95)")
    print(f"{'turns':>7} | {'direct first':>14} | {'proxy first':>14} | {'added first':>11} |"
          f" {'direct total':>14} | {'proxy total':>14} | {'added total':>11}")
    for row in proxy_rows:
        d, p = row["direct"], row["proxy"]
        print(f"{row['turns']:>7,} | {d['first_ms'][0]:>6.1f} / {d['first_ms'][1]:>5.1f} |"
              f" {p['first_ms'][0]:>6.1f} / {p['first_ms'][1]:>5.1f} |"
              f" {p['first_ms'][0] - d['first_ms'][0]:>11.1f} |"
              f" {d['total_ms'][0]:>6.1f} / {d['total_ms'][1]:>5.1f} |"
              f" {p['total_ms'][0]:>6.1f} / {p['total_ms'][1]:>5.1f} |"
              f" {p['total_ms'][0] - d['total_ms'][0]:>11.1f}")
    print("\nmcp: tool call over stdio, ms (median / p95)")
    print(f"{'turns':>7} | " + " | ".join(f"{label:>15}" for label in MCP_CALLS))
    for row in mcp_rows:
        print(f"{row['turns']:>7,} | " + " | ".join(
            f"{row[label][0]:>6.1f} / {row[label][1]:>6.1f}" for label in MCP_CALLS))
    print("\nrequest: time to the first piece of a streamed reply, ms (median / p95)")
    print(f"{'messages':>8} | {'chatmem openai':>15} | {'openai create':>15} | {'ratio':>5}")
    for row in request_rows:
        ours, theirs = row["chatmem"], row["openai"]
        print(f"{row['messages']:>8} | {ours[0]:>6.2f} / {ours[1]:>6.2f} |"
              f" {theirs[0]:>6.2f} / {theirs[1]:>6.2f} | {theirs[0] / ours[0]:>4.1f}×")


if __name__ == "__main__":
    main()
