"""Recall in a history that holds other conversations too.

`chatmem eval` scores each conversation alone, in a history of its own. A real
history file holds many, and a word said all the time in them ("photo", "great",
a month's name) is common in the whole index while this conversation says it a few
dozen times. Each conversation of the development set is evaluated here twice with
`retrieval`, probes only, beside each other: alone (as eval does) and in a history
file already holding every other conversation of the set, each imported `--copies`
times as conversations of their own. It prints id recall, the mean context tokens
and the mean time of a probe's build in both.

    python benchmarks/shared_history.py                   # the development set, 10 copies
    python benchmarks/shared_history.py --copies 20 --budgets 1000 2000 4000
    PYTHONPATH=/path/to/other/checkout python benchmarks/shared_history.py   # another checkout

Vectors come from the user's vector cache, as `benchmarks/recall.py` reads them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from recall import local_embedder  # noqa: E402
from recall_dev import DEV_SET  # noqa: E402

from chatmem.evaluation.replay import replay  # noqa: E402
from chatmem.memory.spec import StrategySpec  # noqa: E402
from chatmem.providers.scripted import ScriptedProvider  # noqa: E402
from chatmem.store import Store  # noqa: E402
from chatmem.transcripts.format import Transcript, message_dicts  # noqa: E402
from chatmem.transcripts.reader import read_transcript  # noqa: E402


@dataclass
class Scored:
    found: int
    expected: int
    tokens: float
    build_ms: float

    @property
    def recall(self) -> float:
        return self.found / self.expected if self.expected else 0.0


def evaluate(transcript: Transcript, budget: int, embedder: Any,
             store: Store | None = None) -> Scored:
    """Evidence ids found and expected, mean probe tokens and mean build ms of
    `retrieval` at `budget`."""
    spec = StrategySpec.single("retrieval", {"max_tokens": str(budget)})
    builds: list[float] = []
    from chatmem.memory.retrieval import RetrievalStrategy

    original = RetrievalStrategy.build

    def timed(self: RetrievalStrategy, request: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(self, request)
        finally:
            builds.append((time.perf_counter() - started) * 1000)

    RetrievalStrategy.build = timed  # type: ignore[method-assign]
    try:
        [run] = replay(transcript, [spec], chat_provider=ScriptedProvider(), embedder=embedder,
                       store=store, save_as="evaluated" if store is not None else None,
                       probes_only=True)
    finally:
        RetrievalStrategy.build = original  # type: ignore[method-assign]
    return Scored(sum(len(p.found_ids) for p in run.probes),
                  sum(len(p.expect_ids) for p in run.probes),
                  statistics.mean(p.tokens for p in run.probes), statistics.mean(builds))


def shared_history(path: Path, others: Sequence[Transcript], copies: int) -> Store:
    store = Store(path)
    for n, other in enumerate(others):
        messages = message_dicts(other.messages)
        for copy in range(copies):
            session = store.sessions.create_session(f"other-{n}-{copy}", "window", {})
            store.history.import_messages(session.id, messages)
    return store


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEV_SET,
                        help=f"transcripts with probes (default: {DEV_SET})")
    parser.add_argument("--copies", type=int, default=10,
                        help="times each other conversation is in the shared history")
    parser.add_argument("--budgets", type=int, nargs="+", default=[2000])
    parser.add_argument("--embedder", default="local", choices=("local", "hash", "none"))
    args = parser.parse_args(argv)
    files = sorted(args.folder.glob("*.jsonl"))
    if len(files) < 2:
        parser.error(f"{args.folder}: needs two transcripts or more")
    transcripts = [read_transcript(f) for f in files]
    embedder = local_embedder(args.embedder)
    import chatmem

    print(f"{args.folder}: each conversation alone, and in a history also holding the "
          f"others {args.copies} times; retrieval, probes only; id recall, mean probe "
          f"tokens, mean build ms; code: {Path(chatmem.__file__).parent}")
    print(f"{'conversation':16} {'budget':>6} {'alone':>7} {'shared':>7} {'tokens':>15}"
          f" {'build ms':>15} {'messages':>9}")
    print("-" * 80)
    totals: dict[int, list[Scored]] = {}
    for i, (file, transcript) in enumerate(zip(files, transcripts, strict=True)):
        others = transcripts[:i] + transcripts[i + 1:]
        held = len(transcript.messages) + args.copies * sum(len(o.messages) for o in others)
        for budget in args.budgets:
            alone = evaluate(transcript, budget, embedder)
            with tempfile.TemporaryDirectory() as folder:
                store = shared_history(Path(folder) / "shared.db", others, args.copies)
                try:
                    shared = evaluate(transcript, budget, embedder, store)
                finally:
                    store.close()
            totals.setdefault(budget, []).extend([alone, shared])
            print_row(file.stem, budget, alone, shared, held)
    for budget, scored in totals.items():
        alone, shared = (Scored(sum(s.found for s in part), sum(s.expected for s in part),
                                statistics.mean(s.tokens for s in part),
                                statistics.mean(s.build_ms for s in part))
                         for part in (scored[0::2], scored[1::2]))
        print_row("all", budget, alone, shared, None)


def print_row(name: str, budget: int, alone: Scored, shared: Scored, held: int | None) -> None:
    print(f"{name:16} {budget:>6,} {alone.recall:>7.3f} {shared.recall:>7.3f}"
          f" {alone.tokens:>7,.0f}/{shared.tokens:<7,.0f}"
          f" {alone.build_ms:>7.2f}/{shared.build_ms:<7.2f}"
          f" {'' if held is None else f'{held:,}':>9}")

if __name__ == "__main__":
    main()
