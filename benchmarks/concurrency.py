"""N chat processes × M turns at once, on one session and on N sessions, SQLite next to PostgreSQL.

Each client is its own interpreter (as separate chatmem processes are) with its
own connection, running turns through the engine with the scripted provider
and summary-buffer at a small max_tokens, so summaries fold while the others
write. All clients open their session first, then start together. Reported per
backend and layout: turns per second (all turns / wall time from the start
signal to the last client's end), median and p95 turn latency (the whole
run_turn, scripted reply included), turns lost (N × M expected as stored ok
turns and 2 × N × M messages) and message ids folded into more than one
summary version (0 by design: each version covers only messages not folded
before).

    python benchmarks/concurrency.py            # 8 processes × 200 turns
    python benchmarks/concurrency.py --quick    # 4 × 25
    python benchmarks/concurrency.py --backend postgres --pg-url postgresql://me@host/db
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from pgserver import pg_server, shown_command  # noqa: E402

_spawn = multiprocessing.get_context("spawn")


def line(tag: str, i: int) -> str:
    return f"{tag} asks about order ORD-{i}: 我们第{i}天去杭州，预算五千元。"


def client(location: str, session: str, tag: str, turns: int, strategy: str,
           ready: Any, start: Any, results: Any) -> None:
    from chatmem.config.sections import EmbeddingsSection
    from chatmem.config.settings import Settings
    from chatmem.engine import open_session
    from chatmem.plugins import load_registries
    from chatmem.providers.scripted import ScriptedProvider
    from chatmem.store import Store

    strategies = load_registries().strategies
    spec = strategies.parse(strategy)
    settings = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="none"))
    latencies: list[float] = []
    error, waiting = "", True
    try:
        with Store(location) as store:
            engine = open_session(store, settings, ScriptedProvider(), session, strategy=spec,
                                  strategies=strategies)
            ready.put(tag)
            waiting = False
            start.wait()
            for i in range(turns):
                started = time.perf_counter()
                engine.run_turn(line(tag, i))
                latencies.append((time.perf_counter() - started) * 1000)
                engine.between_turns()  # the chat's upkeep, once a reply is shown
    except Exception as e:  # a benchmark reports a failed client; it does not stop the run
        error = f"{type(e).__name__}: {e}"
        if waiting:  # run() waits for every client to be ready, failed ones included
            ready.put(tag)
    results.put({"tag": tag, "latencies": latencies, "error": error})


def run(location: str, processes: int, turns: int, shared: bool,
        strategy: str) -> dict[str, Any]:
    from chatmem.store import Store

    Store(location).close()  # the schema exists before the clients race for it
    sessions = ["s"] * processes if shared else [f"s{i}" for i in range(processes)]
    ready, start, results = _spawn.Queue(), _spawn.Event(), _spawn.Queue()
    clients = [_spawn.Process(target=client, args=(location, sessions[i], f"p{i}", turns,
                                                   strategy, ready, start, results))
               for i in range(processes)]
    for c in clients:
        c.start()
    for _ in clients:
        ready.get(timeout=300)
    started = time.perf_counter()
    start.set()
    done = [results.get(timeout=3600) for _ in clients]
    seconds = time.perf_counter() - started
    for c in clients:
        c.join(60)
    latencies = [ms for d in done for ms in d["latencies"]]
    errors = [f"{d['tag']}: {d['error']}" for d in done if d["error"]]
    stored_turns, stored_messages, refolded, folds = 0, 0, 0, 0
    strategy_name = strategy.partition(":")[0]
    with Store(location) as store:
        for name in sorted(set(sessions)):
            session = store.sessions.find_session(name)
            if session is None:
                continue
            stored_turns += len(store.turns.turns(session.id, "ok"))
            stored_messages += len(store.history.messages(session.id))
            versions = store.memory.summaries(session.id, strategy_name)
            folds += len(versions)
            covered = [i for v in versions for i in v.covered_ids]
            refolded += len(covered) - len(set(covered))
    expected = processes * turns
    return {
        "processes": processes, "turns": turns, "sessions": len(set(sessions)),
        "seconds": seconds, "turns_per_s": len(latencies) / seconds if seconds else 0.0,
        "median_ms": statistics.median(latencies) if latencies else None,
        "p95_ms": percentile(latencies, 0.95) if latencies else None,
        "expected_turns": expected, "stored_turns": stored_turns,
        "lost_turns": expected - stored_turns,
        "lost_messages": 2 * expected - stored_messages,
        "summary_versions": folds, "folded_twice": refolded, "errors": errors,
    }


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def print_table(rows: list[dict[str, Any]], strategy: str) -> None:
    print(f"\nConcurrent clients ({strategy}, scripted provider): every turn through the engine")
    header = (f"{'backend':<12}{'layout':<16}{'clients×turns':>15}{'turns/s':>10}{'median ms':>11}"
              f"{'p95 ms':>9}{'lost':>6}{'folds':>7}{'folded twice':>14}{'errors':>8}")
    print(header)
    print("-" * len(header))
    for r in rows:
        layout = "one session" if r["sessions"] == 1 else f"{r['sessions']} sessions"
        median = f"{r['median_ms']:.1f}" if r["median_ms"] is not None else "–"
        p95 = f"{r['p95_ms']:.1f}" if r["p95_ms"] is not None else "–"
        print(f"{r['backend']:<12}{layout:<16}{r['processes']:>7} × {r['turns']:<5}"
              f"{r['turns_per_s']:>10.1f}{median:>11}{p95:>9}{r['lost_turns']:>6}"
              f"{r['summary_versions']:>7}{r['folded_twice']:>14}{len(r['errors']):>8}")
        for error in r["errors"][:3]:
            print(f"    {error}")
    by = {(r["backend"], r["sessions"]): r for r in rows}
    pairs = [(by[("sqlite", n)], by[("postgresql", n)]) for (b, n) in by
             if b == "sqlite" and ("postgresql", n) in by]
    for lite, pg in pairs:
        if lite["turns_per_s"]:
            layout = "one session" if lite["sessions"] == 1 else f"{lite['sessions']} sessions"
            print(f"PostgreSQL / SQLite, {layout}: throughput "
                  f"{pg['turns_per_s'] / lite['turns_per_s']:.2f}×, p95 "
                  f"{pg['p95_ms'] / lite['p95_ms']:.2f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, help="client processes (default 8; quick 4)")
    parser.add_argument("--turns", type=int, help="turns per client (default 200; quick 25)")
    parser.add_argument("--quick", action="store_true", help="4 processes × 25 turns")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--pg-url", help="a PostgreSQL server to use instead of starting one "
                        "(a database is created on it per run and dropped after)")
    parser.add_argument("--strategy", default="summary-buffer:max_tokens=300")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "concurrency.json")
    args = parser.parse_args()
    processes = args.processes or (4 if args.quick else 8)
    turns = args.turns or (25 if args.quick else 200)
    load = os.getloadavg()
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="chatmem-conc-") as tmp:
            for shared in (True, False):
                path = str(Path(tmp) / f"{'one' if shared else 'many'}.db")
                rows.append({"backend": "sqlite",
                             **run(path, processes, turns, shared, args.strategy)})
                print(f"sqlite {'one session' if shared else 'N sessions'}: "
                      f"{rows[-1]['turns_per_s']:.1f} turns/s", file=sys.stderr, flush=True)
    if args.backend in ("postgres", "both"):
        with pg_server(args.pg_url) as server:
            for shared in (True, False):
                url = server.create()
                try:
                    rows.append({"backend": "postgresql",
                                 **run(url, processes, turns, shared, args.strategy)})
                finally:
                    server.drop(url)
                print(f"postgresql {'one session' if shared else 'N sessions'}: "
                      f"{rows[-1]['turns_per_s']:.1f} turns/s", file=sys.stderr, flush=True)
    print_table(rows, args.strategy)
    command = shown_command("benchmarks/concurrency.py", sys.argv[1:])
    print(f"\n{command}: {time.perf_counter() - began:.0f} s; load average at start "
          f"{load[0]:.1f} on {os.cpu_count()} cores")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"command": command, "load": load, "cpus": os.cpu_count(),
                                     "rows": rows}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
