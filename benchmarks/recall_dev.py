"""`benchmarks/recall.py --dev`: recall on real long conversations, this checkout beside another.

Runs `chatmem eval DIR` (the development set: LoCoMo conversations in
chatmem's transcript format, read where they lie, never copied) with
`retrieval` at each budget, in a child process per checkout, and prints id
recall by question type (the probes' `category`), the mean context tokens,
and the wall and CPU time of the whole eval (the child and its workers), in
one table. With `--against REF` (a git ref, or the path of another checkout)
the same eval runs on that code too, alternating with this one when
`--repeat` > 1, so "before" and "after" come from one sitting on the same
load. The synthetic conversation of recall_data.py is evaluated beside it,
for what it tests and the real set does not: Chinese (`zh`) and questions
that name a time (`dated`).

    python benchmarks/recall.py --dev                          # this checkout
    python benchmarks/recall.py --dev --against main           # main beside it
    python benchmarks/recall.py --dev --against main --cold    # empty vector cache
    python benchmarks/recall.py --dev --cold --probes-only     # a first eval, probes only
    python benchmarks/recall.py --dev /path/to/set --strategy retrieval:mode=bm25

Vectors are cached between runs in the user's cache (as `chatmem eval`
does); `--cold` gives each eval an empty one, to time a first evaluation.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEV_SET = Path("/work/shared/data/locomo-dev")
TYPES = ("single-hop", "multi-hop", "temporal", "open-domain")
SYNTHETIC_GROUPS = ("zh", "dated", "en")


@dataclass
class Checkout:
    """Code to evaluate: a folder holding the `chatmem` package."""

    label: str
    path: Path


@dataclass
class Result:
    """One eval of one set by one checkout: recall per (budget, group), tokens, times."""

    checkout: str
    recall: dict[tuple[int, str], float] = field(default_factory=dict)
    tokens: dict[int, float] = field(default_factory=dict)
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    messages: int = 0
    error: str = ""


@contextlib.contextmanager
def checked_out(spec: str) -> Iterator[Checkout]:
    """A checkout from a folder holding `chatmem/`, else a git ref of this repository
    (extracted to a temporary folder with `git archive`, removed afterwards)."""
    folder = Path(spec)
    if (folder / "chatmem").is_dir():
        yield Checkout(spec, folder.resolve())
        return
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", spec],
                            capture_output=True, text=True, check=False)
    if commit.returncode != 0:
        raise SystemExit(f"--against {spec}: neither a folder holding chatmem/ nor a git ref")
    with tempfile.TemporaryDirectory(prefix="chatmem-against-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", spec, "chatmem"],
                                 capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        yield Checkout(f"{spec} ({commit.stdout.strip()})", Path(tmp))


def strategy_specs(strategy: str, budgets: Sequence[int]) -> list[str]:
    """`retrieval:max_tokens=N` per budget (the strategy's own parameters kept)."""
    joiner = "," if ":" in strategy else ":"
    return [f"{strategy}{joiner}max_tokens={b}" for b in budgets]


def groups_of(path: Path, keys: Sequence[str]) -> list[list[str]]:
    """Each probe's groups, in file order: the values of `keys` its line holds."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            if isinstance(item, dict) and "probe" in item:
                found.append([str(item[k]) for k in keys if k in item])
    return found


def count_messages(folder: Path) -> int:
    return sum(1 for f in folder.glob("*.jsonl") for line in f.open(encoding="utf-8")
               if '"role"' in line)


def run_eval(
    checkout: Checkout, folder: Path, specs: Sequence[str], jobs: int, cache: Path | None,
    probes_only: bool,
) -> tuple[dict[str, Any] | None, float, float, str]:
    """`chatmem eval folder` on `checkout`'s code: its JSON, wall and CPU seconds (the
    child and its workers), and the last line of stderr when it failed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout.path), env.get("PYTHONPATH", "")])
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    command = [sys.executable, "-m", "chatmem", "eval", str(folder), "--provider", "scripted",
               "--json", "--jobs", str(jobs)]
    for spec in specs:
        command += ["-s", spec]
    if probes_only:
        command.append("--probes-only")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False,
                          cwd=tempfile.gettempdir())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        return None, wall, cpu, (done.stderr.strip().splitlines() or ["no output"])[-1]
    return json.loads(done.stdout), wall, cpu, ""


def score(data: dict[str, Any], folder: Path, keys: Sequence[str], budgets: Sequence[int],
          result: Result) -> None:
    """Micro id recall per (budget, group) and overall ("all"), mean tokens per budget."""
    hits: dict[tuple[int, str], list[int]] = {}
    tokens: dict[int, list[int]] = {}
    for transcript in data["transcripts"]:
        groups = groups_of(Path(transcript["source"]), keys)
        for budget, run in zip(budgets, transcript["strategies"], strict=True):
            probes = run["eval"]["per_probe"]
            if len(probes) != len(groups):
                raise SystemExit(f"{transcript['source']}: {len(probes)} probes scored, "
                                 f"{len(groups)} in the file")
            for probe, probe_groups in zip(probes, groups, strict=True):
                tokens.setdefault(budget, []).append(probe["tokens"])
                for group in [*probe_groups, "all"]:
                    hit = hits.setdefault((budget, group), [0, 0])
                    hit[0] += len(probe["found_ids"])
                    hit[1] += len(probe["expect_ids"])
    result.recall = {k: found / total for k, (found, total) in hits.items() if total}
    result.tokens = {b: sum(t) / len(t) for b, t in tokens.items() if t}


def evaluate(sets: Sequence[tuple[str, Path, tuple[str, ...]]], checkouts: Sequence[Checkout],
             args: argparse.Namespace) -> dict[tuple[str, str], Result]:
    """Every set under every checkout, `repeat` times, checkouts alternating."""
    results: dict[tuple[str, str], Result] = {}
    specs = strategy_specs(args.strategy, args.budgets)
    for round_number in range(args.repeat):
        for name, folder, keys in sets:
            for checkout in checkouts:
                result = results.setdefault((name, checkout.label), Result(checkout.label))
                result.messages = count_messages(folder)
                with contextlib.ExitStack() as stack:
                    cache = (Path(stack.enter_context(tempfile.TemporaryDirectory(
                        prefix="chatmem-cold-"))) if args.cold else None)
                    data, wall, cpu, error = run_eval(checkout, folder, specs, args.jobs, cache,
                                                     args.probes_only)
                result.wall_s.append(wall)
                result.cpu_s.append(cpu)
                if data is None:
                    result.error = error
                else:
                    score(data, folder, keys, args.budgets, result)
                print(f"  {name} · {checkout.label} (round {round_number + 1}): "
                      f"{wall:.1f} s wall, {cpu:.1f} s CPU"
                      + (f" — {error}" if error else ""), file=sys.stderr, flush=True)
    return results


def print_results(sets: Sequence[tuple[str, Path, tuple[str, ...]]],
                  checkouts: Sequence[Checkout], results: dict[tuple[str, str], Result],
                  args: argparse.Namespace) -> None:
    for name, folder, _keys in sets:
        groups = [*(TYPES if name == "dev" else SYNTHETIC_GROUPS), "all"]
        print(f"\n{name}: {folder} ({results[(name, checkouts[0].label)].messages} messages), "
              f"strategy {args.strategy}; id recall by question type, mean context tokens, "
              f"time of the whole eval (median of {args.repeat}; CPU: the eval's processes)")
        width = max(len(c.label) for c in checkouts) + 2
        header = (f"{'checkout':<{width}}{'budget':>7}" + "".join(f"{g:>12}" for g in groups)
                  + f"{'tokens':>9}{'wall s':>9}{'CPU s':>8}")
        print(header)
        print("-" * len(header))
        for checkout in checkouts:
            result = results[(name, checkout.label)]
            if result.error:
                print(f"{checkout.label:<{width}}failed: {result.error}")
                continue
            for i, budget in enumerate(args.budgets):
                cells = "".join(f"{result.recall.get((budget, g), float('nan')):>12.3f}"
                                for g in groups)
                times = (f"{median(result.wall_s):>9.1f}{median(result.cpu_s):>8.1f}"
                         if i == 0 else "")
                print(f"{checkout.label if i == 0 else '':<{width}}{budget:>7,}{cells}"
                      f"{result.tokens.get(budget, 0):>9,.0f}{times}")


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def synthetic_set(folder: Path, seed: int) -> Path:
    """recall_data.py's conversation (this checkout's generator, `seed`) as a transcript."""
    import recall_data

    lines = recall_data.generate(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"synthetic-{seed}.jsonl").write_text(
        "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
        encoding="utf-8")
    return folder


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="recall.py --dev", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", nargs="?", type=Path, const=DEV_SET, default=DEV_SET,
                        metavar="DIR", help="the development set (default: %(const)s)")
    parser.add_argument("--against", metavar="REF_OR_DIR",
                        help="also evaluate this git ref or checkout folder, beside this one")
    parser.add_argument("--budgets", type=int, nargs="+", default=[1000, 2000, 4000])
    parser.add_argument("--strategy", default="retrieval",
                        help="the strategy and its parameters, as `chatmem eval -s` takes them")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="transcripts evaluated at once (chatmem eval --jobs)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="evaluations per checkout, alternating (times: the median)")
    parser.add_argument("--cold", action="store_true",
                        help="each eval starts from an empty vector cache")
    parser.add_argument("--probes-only", action="store_true",
                        help="pass --probes-only to chatmem eval: contexts at the probes only "
                             "(the same recall; needs a checkout that has the option)")
    parser.add_argument("--no-synthetic", action="store_true",
                        help="leave out the synthetic set (Chinese, dated questions)")
    parser.add_argument("--seed", type=int, default=7, help="of the synthetic set")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if not args.dev.is_dir():
        raise SystemExit(f"--dev {args.dev}: no such folder")
    with contextlib.ExitStack() as stack:
        sets: list[tuple[str, Path, tuple[str, ...]]] = [("dev", args.dev, ("category",))]
        if not args.no_synthetic:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chatmem-syn-")))
            sets.append(("synthetic", synthetic_set(tmp, args.seed), ("kind", "lang")))
        checkouts = [Checkout("this checkout", ROOT)]
        if args.against:
            checkouts.insert(0, stack.enter_context(checked_out(args.against)))
        results = evaluate(sets, checkouts, args)
        print_results(sets, checkouts, results, args)
    if args.json:
        args.json.write_text(json.dumps(
            {f"{s} · {c}": {"recall": {f"{b}:{g}": v for (b, g), v in r.recall.items()},
                            "tokens": r.tokens, "wall_s": r.wall_s, "cpu_s": r.cpu_s,
                            "messages": r.messages, "error": r.error}
             for (s, c), r in results.items()}, indent=1) + "\n", encoding="utf-8")
