"""What one request of a served conversation costs `chatmem serve` (benchmarks/run.py --only
served), beside the REPL's turn of the same strategy on the same history (retrieval·hash).

The server runs in the cell's process on a port of its own (real HTTP, uvicorn, the
`scripted` model), over a copy of the history whose vectors are all stored; the client
sends one new user message per request naming the conversation (X-Chatmem-Conversation),
as an app that keeps its own id does. Measured per request: wall ms until the answer, and
the process's CPU ms from one request to the next (the memory update after the answer
and the embedding of the turn's messages included; the small client's own share too).

`options` chooses what each request carries: `same` (none), or `seed` (a seed of its own
each time, as some clients send): both must cost the same, the conversation's engine (and
recall's vectors) kept open between requests.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from workloads import copy_base, measured, phase, question, serving, summary


def served_cell(spec: dict[str, Any]) -> dict[str, Any]:
    import httpx2 as httpx

    from chatmem.config.sections import EmbeddingsSection
    from chatmem.config.settings import Settings

    path = Path(spec["db"])
    copy_base(Path(spec["base"]), path)
    settings = Settings(provider="scripted", db=str(path),
                        embeddings=EmbeddingsSection(provider=spec.get("embedder", "hash")))
    model = f"scripted@{spec.get('strategy', 'retrieval')}"  # the cell's strategy, by name
    headers = {"X-Chatmem-Conversation": "bench"}
    cpu: list[float] = []
    settle = spec.get("settle_s", 0.2)
    """Seconds after each answer before the next request: the memory update and the
    embedding of the turn's messages run then, as between a person's messages."""

    def one(i: int) -> float:
        fields = {"seed": 1000 + i} if spec.get("options") == "seed" else {}
        started, cpu_started = time.perf_counter(), time.process_time()
        answer = client.post(url, headers=headers, json={
            "model": model, "messages": [{"role": "user", "content": question(i)}], **fields})
        took = (time.perf_counter() - started) * 1000
        answer.raise_for_status()
        time.sleep(settle)
        cpu.append((time.process_time() - cpu_started) * 1000)
        return took

    with serving(settings) as served, httpx.Client(timeout=600) as client:
        url = f"{served}/v1/chat/completions"
        phase("first request")
        started = time.perf_counter()
        one(0)  # opens the history, the engine, reads every stored vector
        first_ms = (time.perf_counter() - started) * 1000 - settle * 1000
        cpu.clear()
        phase("requests")
        samples = measured(one, spec["repeat"], spec["seconds"])
    return {"turn": summary(samples, cpu), "first_turn_ms": first_ms,
            "options": spec.get("options", "same")}
