"""How much of the evidence each memory strategy recalls at 1,000 / 2,000 / 4,000 tokens.

Replays the long two-language conversation from benchmarks/recall_data.py
(fixed seed) under each strategy with chatmem's own eval (recorded replies,
scripted helper model, in-memory history file), and prints id recall — the
share of evidence messages present in the context at each probe — next to
the mean context tokens, overall and per question kind and language.

Strategies whose size is a count (window k, retrieval top_k, LangChain's k)
are sized to the budget from the conversation's mean turn length, so every
row spends about the same tokens; check the "tokens" column.

    pip install -e '.[embed]'                 # dense and hybrid rows need an embedder
    python benchmarks/recall.py               # all rows, 1k/2k/4k
    python benchmarks/recall.py --budgets 2000 --only retrieval
    python benchmarks/recall.py --json out.json
    python benchmarks/recall.py --lexical      # single facts asked with a word they share
    python benchmarks/recall.py --dev --against main   # real conversations, main beside this
                                               # (see benchmarks/recall_dev.py)

LangChain's VectorStoreRetrieverMemory over the same embedder runs when
benchmarks/requirements.txt is installed; otherwise its row says why not.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import recall_data

from chatmem.evaluation.replay import replay
from chatmem.evaluation.scoring import StrategyRun
from chatmem.memory.spec import StrategySpec
from chatmem.plugins import load_registries
from chatmem.providers.scripted import ScriptedProvider
from chatmem.transcripts.format import Transcript
from chatmem.transcripts.reader import parse_transcript

FIXED = 40
"""System prompt, probe and priming: tokens every context spends before memory (about)."""


@dataclass
class Row:
    label: str
    budget: int
    recall: float
    tokens: float
    by_group: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    note: str = ""


def load(seed: int, lexical: bool = False) -> tuple[Transcript, list[dict[str, Any]]]:
    lines = recall_data.generate(seed, lexical=lexical)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    return parse_transcript(text, f"recall seed {seed}"), [x for x in lines if "probe" in x]


def mean_turn_tokens(transcript: Transcript) -> float:
    counter = ScriptedProvider().token_counter()
    messages = transcript.messages
    total = sum(counter.count_message(m.role, m.content) for m in messages)
    return total / max(1, sum(1 for m in messages if m.role == "user"))


def has_param(strategy: str, name: str) -> bool:
    return name in load_registries().strategies.strategy(strategy).params


def spec(text: str, params: dict[str, str]) -> StrategySpec:
    return load_registries().strategies.parse(text, params)


def specs_for(budget: int, turn: float, only: set[str] | None) -> list[tuple[str, StrategySpec]]:
    """(family, spec) rows for one budget; families a build lacks are left out."""
    count = max(1, round((budget - FIXED) / turn))
    rows: list[tuple[str, StrategySpec]] = [
        ("window", spec("window", {"k": str(count)})),
        ("tokens", spec("tokens", {"max_tokens": str(budget)})),
    ]
    if has_param("retrieval", "mode"):
        for mode in ("bm25", "dense", "hybrid"):
            rows.append((f"retrieval {mode}", spec(
                "retrieval", {"mode": mode, "max_tokens": str(budget)})))
        rows.append(("summary-buffer+retrieval", spec(
            "summary-buffer+retrieval",
            {"summary-buffer.max_tokens": str(budget), "retrieval.max_tokens": str(budget)})))
    else:
        recall_k = max(1, count - 2)
        rows.append(("retrieval", spec("retrieval", {"top_k": str(recall_k)})))
        rows.append(("summary-buffer+retrieval", spec(
            "summary-buffer+retrieval",
            {"summary-buffer.max_tokens": str(budget), "retrieval.top_k": str(recall_k)})))
    return [(f, s) for f, s in rows if only is None or f.split()[0] in only or f in only]


def group_recall(run: StrategyRun, probes: list[dict[str, Any]]) -> dict[str, float]:
    found: dict[str, list[int]] = {}
    for result, raw in zip(run.probes, probes, strict=True):
        for group in (raw["kind"], raw["lang"]):
            hit, total = found.setdefault(group, [0, 0])
            found[group] = [hit + len(result.found_ids), total + len(result.expect_ids)]
    return {g: hit / total for g, (hit, total) in found.items() if total}


def run_chatmem(transcript: Transcript, probes: list[dict[str, Any]], family: str,
                spec: StrategySpec, budget: int, embedder: Any = None) -> Row:
    started = time.perf_counter()
    provider = ScriptedProvider()
    if embedder is not None:
        [run] = replay(transcript, [spec], chat_provider=provider, embedder=embedder)
    else:
        [run] = replay(transcript, [spec], chat_provider=provider)
    tokens = statistics.mean(p.tokens for p in run.probes)
    return Row(family, budget, run.id_recall() or 0.0, tokens, group_recall(run, probes),
               time.perf_counter() - started, spec.label)


# -- LangChain's VectorStoreRetrieverMemory -------------------------------------------------


def run_langchain(transcript: Transcript, probes: list[dict[str, Any]], budget: int,
                  turn: float, embed: Callable[[list[str]], list[list[float]]] | None) -> Row:
    """VectorStoreRetrieverMemory(k sized to the budget) over an in-memory vector store.

    It stores each exchange as one document "input: …\\noutput: …" and recalls the k
    nearest to the question; a turn's evidence counts as found when its document is.
    """
    try:
        from langchain_classic.memory import VectorStoreRetrieverMemory
        from langchain_core.embeddings import Embeddings
        from langchain_core.vectorstores import InMemoryVectorStore
    except ImportError as e:
        return Row("langchain VectorStoreRetrieverMemory", budget, 0.0, 0.0,
                   note=f"skipped: {e.name} is not installed (benchmarks/requirements.txt)")
    if embed is None:
        return Row("langchain VectorStoreRetrieverMemory", budget, 0.0, 0.0,
                   note="skipped: no local embedder (pip install -e '.[embed]')")
    from chatmem.transcripts.format import Probe

    class Adapter(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embed(texts)

        def embed_query(self, text: str) -> list[float]:
            return embed([text])[0]

    started = time.perf_counter()
    counter = ScriptedProvider().token_counter()
    k = max(1, round((budget - FIXED) / turn))
    store = InMemoryVectorStore(Adapter())
    memory = VectorStoreRetrieverMemory(retriever=store.as_retriever(search_kwargs={"k": k}))
    found = expected = 0
    tokens: list[int] = []
    groups: dict[str, list[int]] = {}
    pending: dict[str, Any] = {}
    probe_index = 0
    for item in transcript.items:
        if isinstance(item, Probe):
            docs = memory.retriever.invoke(item.question)
            ids = {i for d in docs for i in d.metadata.get("ids", [])}
            text = "\n".join(d.page_content for d in docs)
            tokens.append(counter.count_message("system", text) + FIXED)
            hit = sum(1 for i in item.expect_ids if i in ids)
            found += hit
            expected += len(item.expect_ids)
            raw = probes[probe_index]
            probe_index += 1
            for group in (raw["kind"], raw["lang"]):
                h, t = groups.setdefault(group, [0, 0])
                groups[group] = [h + hit, t + len(item.expect_ids)]
        elif item.role == "user":
            pending = {"input": item.content, "ids": [item.id]}
        elif item.role == "assistant" and pending:
            # save_context, with the message ids kept as metadata for scoring.
            text = f"input: {pending['input']}\noutput: {item.content}"
            store.add_texts([text], metadatas=[{"ids": [*pending["ids"], item.id]}])
            pending = {}
    del memory  # its save_context is what add_texts above does, plus the ids
    return Row("langchain VectorStoreRetrieverMemory", budget, found / expected,
               statistics.mean(tokens),
               {g: h / t for g, (h, t) in groups.items() if t},
               time.perf_counter() - started, f"k={k}")


def local_embedder(name: str = "local") -> Any:
    """chatmem's embedder `name`, remembering vectors across runs (in the user's vector
    cache file, as eval does, so a second run embeds nothing); None when not installed."""
    if name == "none":
        return None
    try:
        from chatmem.config.paths import vector_cache_path
        from chatmem.embeddings import Remembering
        from chatmem.errors import ChatmemError
        from chatmem.store.vector_cache import VectorCacheFile
    except ImportError:
        return None
    try:
        inner = load_registries().create_embedder(name)
    except (ChatmemError, ImportError):
        return None
    return Remembering(inner, VectorCacheFile(vector_cache_path()) if name == "local" else None)


# -- output -------------------------------------------------------------------------------


def print_table(rows: list[Row], budgets: list[int]) -> None:
    labels = list(dict.fromkeys(r.label for r in rows))
    header = f"{'strategy':<38}" + "".join(f"{'@' + str(b):>16}" for b in budgets)
    print(header)
    print("-" * len(header))
    for label in labels:
        cells = []
        for budget in budgets:
            row = next((r for r in rows if r.label == label and r.budget == budget), None)
            if row is None or row.note.startswith("skipped"):
                cells.append(f"{'–':>16}")
            else:
                cells.append(f"{row.recall:>7.3f} ({row.tokens:>5,.0f})")
        print(f"{label:<38}" + "".join(cells))
    print("\nid recall (mean context tokens). By question kind and language:")
    groups = sorted({g for r in rows for g in r.by_group})
    print(f"{'strategy @budget':<44}" + "".join(f"{g:>10}" for g in groups) + f"{'secs':>8}")
    for row in rows:
        if row.note.startswith("skipped"):
            print(f"{row.label + ' @' + str(row.budget):<44}{row.note}")
            continue
        print(f"{row.label + ' @' + str(row.budget):<44}"
              + "".join(f"{row.by_group.get(g, 0):>10.3f}" for g in groups)
              + f"{row.seconds:>8.1f}")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "--dev" in argv or any(a.startswith("--dev=") for a in argv):
        import recall_dev

        recall_dev.main(argv)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--budgets", type=int, nargs="+", default=[1000, 2000, 4000])
    parser.add_argument("--only", nargs="+", help="families: window tokens retrieval "
                        "summary-buffer+retrieval langchain")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--lexical", action="store_true",
                        help="single facts asked with a word of their statement")
    parser.add_argument("--embedder", default="local", choices=("local", "hash", "none"),
                        help="what dense and hybrid rows rank meaning with (hash: a "
                        "deterministic stand-in, no model)")
    parser.add_argument("--quick", action="store_true",
                        help="2,000 tokens, retrieval bm25 and hybrid only (a few minutes)")
    args = parser.parse_args(argv)
    if args.quick:
        args.budgets = [2000]
        args.only = args.only or ["retrieval bm25", "retrieval hybrid"]
    transcript, probes = load(args.seed, args.lexical)
    turn = mean_turn_tokens(transcript)
    only = set(args.only) if args.only else None
    kinds = {k: sum(1 for p in probes if p["kind"] == k)
             for k in sorted({p["kind"] for p in probes})}
    print(f"conversation: seed {args.seed}, {transcript.user_turns()} turns, {len(probes)} "
          f"probes ({', '.join(f'{n} {k}' for k, n in kinds.items())}), {turn:.0f} tokens "
          f"per turn on average; embedder: {args.embedder}\n")
    rows: list[Row] = []
    embedder = local_embedder(args.embedder)
    embed = None if embedder is None else (
        lambda texts: [list(map(float, v)) for v in embedder.embed(texts)])
    for budget in args.budgets:
        for family, spec in specs_for(budget, turn, only):
            rows.append(run_chatmem(transcript, probes, family, spec, budget, embedder))
            print(f"  {family} @{budget}: {rows[-1].recall:.3f} ({rows[-1].tokens:,.0f} tokens,"
                  f" {rows[-1].seconds:.1f} s)", file=sys.stderr)
        if only is None or "langchain" in only:
            rows.append(run_langchain(transcript, probes, budget, turn, embed))
    print_table(rows, args.budgets)
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=1))


if __name__ == "__main__":
    main()
