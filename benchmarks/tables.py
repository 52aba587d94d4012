"""The tables benchmarks/run.py prints, from a run's data (also `run.py --show JSON`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

HYBRID = "retrieval·hash"
"""The hybrid cell: `retrieval` ranking by words and meaning with the deterministic `hash`
embedder (256 dimensions, like LangChain's DeterministicFakeEmbedding in its peer), over a
history whose vectors are all stored."""
PEERS = {
    # LangChain class → the chatmem cells it is compared with (the first one present)
    "ConversationBufferWindowMemory": ("window",),
    "ConversationTokenBufferMemory": ("tokens",),
    "ConversationSummaryBufferMemory": ("summary-buffer",),
    "VectorStoreRetrieverMemory": (HYBRID, "retrieval"),
    "VectorStoreRetrieverMemory·Chroma": (HYBRID, "retrieval"),
    "VectorStoreRetrieverMemory·PGVector": (HYBRID, "retrieval"),
}
DURABLE = {"VectorStoreRetrieverMemory·Chroma": "chroma",
           "VectorStoreRetrieverMemory·PGVector": "pgvector"}
"""The peers over a store that survives the process (run in the peers' own environment)."""

REPLAY_TRANSCRIPT = Path(__file__).resolve().parent.parent / "sessions" / "long-chat.jsonl"


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _cell(row: dict[str, Any] | None, key: str = "median_ms") -> str:
    if row is None:
        return "–"
    if "error" in row:
        return "timeout" if row.get("timeout") else "failed"
    return _ms(row["turn"][key]) if key in row["turn"] else "–"


def _cpu_ratio(theirs: dict[str, Any], mine: dict[str, Any] | None) -> str:
    if mine is None or "error" in mine or "error" in theirs:
        return ""
    a, b = theirs["turn"].get("cpu_median_ms"), mine["turn"].get("cpu_median_ms")
    if not a or not b:
        return ""
    times = a / b
    return f"{times:,.0f}×" if times >= 10 else f"{times:.2f}×"


def _cpu(row: dict[str, Any] | None) -> str:
    return _cell(row, "cpu_median_ms") + " / " + _cell(row, "cpu_p95_ms")


BACKEND_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def backend_of(row: dict[str, Any]) -> str:
    return str(row.get("backend", "sqlite"))  # runs saved before PostgreSQL have no key


def print_tables(data: dict[str, Any], backend: str) -> None:
    rows = [r for r in data["turn_cost"] if backend_of(r) == backend]
    sizes = data["turns"]
    ours = [r for r in rows if r["memory"] == "chatmem"]
    names = list(dict.fromkeys(r["strategy"] for r in ours))
    by = {(r["memory"], r["strategy"], r["turns"]): r for r in rows}
    print(f"\n{BACKEND_NAMES[backend]}: per-turn overhead, ms (build + commit + memory update,"
          " model excluded): median / p95")
    header = f"{'strategy':<30}" + "".join(f"{f'{n:,} turns':>20}" for n in sizes) + \
        f"{'last/first':>12}"
    print(header)
    print("-" * len(header))
    for name in names:
        cells = [by.get(("chatmem", name, n)) for n in sizes]
        line = f"{name:<30}" + "".join(f"{_cell(c) + ' / ' + _cell(c, 'p95_ms'):>20}"
                                       for c in cells)
        first, last = cells[0], cells[-1]
        if first and last and "error" not in first and "error" not in last:
            line += f"{last['turn']['median_ms'] / first['turn']['median_ms']:>11.2f}×"
        print(line)

    print("\nAt each size: build ms (context alone), first catch-up s, the first turn's ms"
          " after opening (left out of the medians); per turn: upkeep ms"
          " between turns (the chat's, while a reply is read: a little of the word index"
          " merged, the log folded every 8 turns; mean), strategy model calls, bytes stored,"
          " SQL statements (the upkeep's included), rows read")
    header = (f"{'strategy':<30}{'turns':>8}{'build':>9}{'catch-up':>10}{'first':>8}"
              f"{'between':>9}"
              f"{'calls':>7}{'bytes':>11}{'queries':>9}{'rows':>9}")
    print(header)
    print("-" * len(header))
    for name in names:
        for n in sizes:
            r = by.get(("chatmem", name, n))
            if r is None or "error" in r:
                why = r["error"] if r else "not run"
                print(f"{name:<30}{n:>8,}  {why}")
                continue
            calls = sum(v for k, v in r["model_calls_per_turn"].items() if k != "chat")
            between = r.get("between_turns_ms")
            upkeep = "—" if between is None else _ms(between)
            first = "—" if r.get("first_turn_ms") is None else _ms(r["first_turn_ms"])
            print(f"{name:<30}{n:>8,}{_ms(r['build']['median_ms']):>9}{r['catch_up_s']:>10.2f}"
                  f"{first:>8}{upkeep:>9}{calls:>7.2f}{r['bytes_per_turn']:>11,.0f}"
                  f"{r.get('statements_per_turn', 0):>9,.0f}{r.get('rows_per_turn', 0):>9,.0f}")

    peers = [r for r in rows if r["memory"] == "langchain"]
    if peers:
        print("\nLangChain classic, same run: ms per turn (load_memory_variables + save_context);"
              " CPU: the same turns' CPU ms (median / p95), which other processes do not"
              " inflate; PGVector's adds its server's (the client's alone below)")
        header = (f"{'turns':>7}  {'LangChain':<34}{'median':>10}{'chatmem':>24}{'median':>9}"
                  f"{'LangChain / chatmem':>21}{'CPU':>15}{'CPU':>15}{'CPU ratio':>11}")
        print(header)
        print("-" * len(header))
        for r in peers:
            compared = [n for n in PEERS[r["strategy"]] if ("chatmem", n, r["turns"]) in by]
            for name in compared or PEERS[r["strategy"]][-1:]:
                mine = by.get(("chatmem", name, r["turns"]))
                ratio = ""
                if mine and "error" not in mine and "error" not in r:
                    times = r["turn"]["median_ms"] / mine["turn"]["median_ms"]
                    ratio = f"{times:,.0f}×" if times >= 10 else f"{times:.2f}×"
                elif "error" in r:
                    ratio = "  " + r["error"]
                print(f"{r['turns']:>7,}  {r['strategy']:<34}{_cell(r):>10}"
                      f"{name:>24}{_cell(mine):>9}{ratio:>21}"
                      f"{_cpu(r):>15}{_cpu(mine):>15}{_cpu_ratio(r, mine):>11}")
        servers = [r for r in peers if "server_cpu_median_ms" in r.get("turn", {})]
        for r in servers:
            print(f"{r['turns']:>7,}  {r['strategy']:<34} CPU median: client "
                  f"{_cell(r, 'client_cpu_median_ms')}, server {_cell(r, 'server_cpu_median_ms')}")


def print_side_by_side(data: dict[str, Any]) -> None:
    """PostgreSQL next to SQLite, cell by cell: per-turn ms and statements per turn."""
    by = {(backend_of(r), r["strategy"], r["turns"]): r for r in data["turn_cost"]
          if r["memory"] == "chatmem"}
    names = list(dict.fromkeys(s for _, s, _ in by))
    print("\nPostgreSQL next to SQLite, same run: per-turn overhead ms (median / p95),"
          " SQL statements per turn (n), PostgreSQL / SQLite median\n(SQLite's statements include"
          " BEGIN/COMMIT; PostgreSQL's leave out the BEGIN/COMMIT/SAVEPOINT psycopg sends"
          " and the write check's lock and probe, about 6 a turn)")
    header = (f"{'strategy':<30}{'turns':>8}{'SQLite':>18}{'PostgreSQL':>18}{'SQLite n':>10}"
              f"{'PG n':>7}{'PG/SQLite':>11}")
    print(header)
    print("-" * len(header))
    for name in names:
        for n in data["turns"]:
            lite, pg = by.get(("sqlite", name, n)), by.get(("postgresql", name, n))
            if lite is None and pg is None:
                continue
            ratio = ""
            if lite and pg and "error" not in lite and "error" not in pg:
                ratio = f"{pg['turn']['median_ms'] / lite['turn']['median_ms']:.2f}×"

            def both(r: dict[str, Any] | None) -> str:
                return _cell(r) + " / " + _cell(r, "p95_ms")

            def statements(r: dict[str, Any] | None) -> str:
                return "–" if r is None or "error" in r else f"{r['statements_per_turn']:.0f}"

            print(f"{name:<30}{n:>8,}{both(lite):>18}{both(pg):>18}{statements(lite):>10}"
                  f"{statements(pg):>7}{ratio:>11}")


def print_others(data: dict[str, Any]) -> None:
    if data.get("replay"):
        print(f"\nReplay --keep-replies of {REPLAY_TRANSCRIPT.name}:")
        for r in data["replay"]:
            shown = r.get("error") or (f"{r['turns_per_s']:>8,.0f} turns/s  "
                                       f"({r['turns']} turns in {r['seconds']:.2f} s)")
            print(f"  {r['strategy']:<28} {shown}")
    if data.get("startup"):
        s = data["startup"]
        print("\nStart-up, median ms: " + ", ".join(f"{k} {v:.0f}" for k, v in
                                                    s["median_ms"].items())
              + f" ({s['ratio']:.2f}×)")
    if data.get("tokens") and "error" not in data["tokens"]:
        t = data["tokens"]
        print(f"\nToken counting, {t['messages']:,} messages, {t['tokens']:,} tokens:"
              f" chatmem {t['chatmem_tokens_per_s'] / 1e6:.2f} M tokens/s,"
              f" tiktoken encode_ordinary_batch {t['tiktoken_batch_tokens_per_s'] / 1e6:.2f} M/s"
              f" ({t['chatmem_tokens_per_s'] / t['tiktoken_batch_tokens_per_s']:.2f}×),"
              f" encode_ordinary one by one {t['tiktoken_single_tokens_per_s'] / 1e6:.2f} M/s")


def print_run(data: dict[str, Any]) -> None:
    backends = list(dict.fromkeys(backend_of(r) for r in data["turn_cost"]))
    for backend in backends:
        print_tables(data, backend)
    if len(backends) > 1:
        print_side_by_side(data)
    print_others(data)
    print(f"\n{data['command']}: {data['seconds']:.0f} s; load average at start "
          f"{data['machine']['load'][0]:.1f} on {data['machine']['cpus']} cores")
