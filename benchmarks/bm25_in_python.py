"""Would BM25 scored in Python, from postings kept per process, beat FTS5's bm25()?

    python benchmarks/bm25_in_python.py --turns 100 1000 10000

Issue 31 item 6 named it as the one lever left on a retrieval turn's word search: FTS5's
bm25() costs ~1.5-2.8 us a row (it reads each row's size from the index's docsize table)
and the join to `messages` ~0.85 us. This measures it rather than building it into the
store: the steady turns of benchmarks/run.py's `retrieval·hash` cell (as turn_profile.py
runs them) are played, each `SqliteWords.word_scores` call they make is recorded, and
each is then answered again (in the same process and sitting, CPU seconds) by

  fts5     the store's own statement, as a turn runs it;
  python   FTS5's bm25 formula (fts5_aux.c: k1 1.2, b 0.75, IDF floored at 1e-6, a row's
           phrases summed in query order, rows in rowid order, sorted stably) over term ->
           {rowid: occurrences}, rowid -> tokens and id -> (session, position, turn,
           superseded), all read once from the index (an `fts5vocab` instance table) and
           held; the query's terms stemmed by FTS5 itself (a temp table of the same
           tokenizer, so porter's stems and Chinese bigrams are FTS5's);

and compared: both must give the same (id, position, score) rows, in the same order.
Also timed: reading the postings once (a process's first turn), and a turn's upkeep (its
two new messages' tokens, read through the temp table and added to the postings).

Measured 2026-12-07 (load average 9 on 2 cores; CPU ms a turn), identical rows in 60 of
60 calls at each size (English and Chinese terms):
    100 turns     fts5 0.40  python 0.28  upkeep 0.16  first read    8 ms
  1,000 turns     fts5 0.99  python 0.56  upkeep 0.16  first read   73 ms
 10,000 turns     fts5 0.04  python 0.01  upkeep 0.30  first read  660 ms
A net ~0.3 ms at 1,000 turns (a loss at 100 and 10,000) against a bar of 2 ms: the
whole search statement costs ~1 ms there, so no Python scorer could clear it. Not built.

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable
from operator import itemgetter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workloads  # noqa: E402

WARMUP = 5
K1, B = 1.2, 0.75
"""FTS5's bm25() defaults (fts5_aux.c)."""
AGAIN = 20
"""Times each recorded call is answered by each way, for a steadier CPU figure."""

Call = tuple[list[str], int, int, int, list[tuple[int, int, float]]]


class Postings:
    """An FTS5 index's postings, sizes and message rows, read once, and its stems."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        conn.execute("CREATE VIRTUAL TABLE temp.bm25_vocab"
                     " USING fts5vocab(main, messages_fts, instance)")
        conn.execute("CREATE VIRTUAL TABLE temp.bm25_tok"
                     " USING fts5(terms, tokenize='porter unicode61')")
        conn.execute("CREATE VIRTUAL TABLE temp.bm25_tokv"
                     " USING fts5vocab(temp, bm25_tok, instance)")
        started = time.process_time()
        self.postings: dict[str, dict[int, int]] = {}
        self.sizes: dict[int, int] = {}
        for term, doc, _, _ in conn.execute("SELECT term, doc, col, offset FROM temp.bm25_vocab"):
            found = self.postings.setdefault(term, {})
            found[doc] = found.get(doc, 0) + 1
            self.sizes[doc] = self.sizes.get(doc, 0) + 1
        self.rows = {i: (s, p, t, x) for i, s, p, t, x in conn.execute(
            "SELECT id, session_id, position, turn, superseded FROM messages")}
        self.read_seconds = time.process_time() - started
        self.count, self.tokens = len(self.sizes), sum(self.sizes.values())
        self.stems: dict[str, str | None] = {}

    def tokens_of(self, texts: list[str]) -> list[tuple[str, int]]:
        """FTS5's (term, row) of each of `texts` (rows 1, 2, ...), as the index holds them."""
        self.conn.execute("INSERT INTO temp.bm25_tok (rowid, terms) VALUES "
                          + ", ".join(["(?, ?)"] * len(texts)),
                          [v for i, text in enumerate(texts, 1) for v in (i, text)])
        found = [(term, doc) for term, doc in self.conn.execute(
            "SELECT term, doc FROM temp.bm25_tokv ORDER BY doc, offset")]
        self.conn.execute("DELETE FROM temp.bm25_tok")
        return found

    def stem(self, term: str) -> str | None:
        """The one index term FTS5 makes of `term` (None: it makes none, or several)."""
        if term not in self.stems:
            made = [t for t, _ in self.tokens_of([term])]
            self.stems[term] = made[0] if len(made) == 1 and not term.endswith("*") else None
        return self.stems[term]

    def scores(self, terms: list[str], session_id: int, before_turn: int,
               limit: int) -> list[tuple[int, int, float]]:
        """`SqliteWords.word_scores`, scored here (every term `stem`s to one)."""
        sums: dict[int, float] = {}
        sizes, average = self.sizes, self.tokens / self.count
        for term in terms:
            found = self.postings.get(self.stems[term] or "", {})
            idf = math.log((self.count - len(found) + 0.5) / (len(found) + 0.5))
            idf = 1e-6 if idf <= 0.0 else idf
            for doc, f in found.items():
                # fts5_aux.c's expression, term by term: a row's sum in query order.
                share = idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * sizes[doc] / average)))
                sums[doc] = sums[doc] + share if doc in sums else share
        kept = []
        for doc in sorted(sums):
            session, position, turn, superseded = self.rows[doc]
            if session == session_id and not superseded and turn < before_turn:
                kept.append((doc, position, -1.0 * sums[doc]))
        return [(i, p, -s) for i, p, s in sorted(kept, key=itemgetter(2))[:limit]]


def recorded_calls(turns: int, repeat: int) -> tuple[list[Call], Any, Any]:
    """The word_scores calls of `repeat` steady turns, and the open store and its backend."""
    from chatmem.config.sections import EmbeddingsSection
    from chatmem.config.settings import Settings
    from chatmem.store import Store, sqlite_words

    folder = Path(tempfile.mkdtemp(prefix="bm25-in-python-"))
    base, path = folder / "base.db", folder / "hash.db"
    workloads.build_chatmem_base(base, turns)
    workloads.add_vectors(base, path, "hash")
    provider = workloads.TimedProvider()
    settings = Settings(embeddings=EmbeddingsSection(provider="hash"))
    calls: list[Call] = []
    original = sqlite_words.SqliteWords.word_scores

    def recording(self: Any, terms: list[str], session_id: int, before_turn: int,
                  limit: int) -> list[tuple[int, int, float]]:
        found = original(self, terms, session_id, before_turn, limit)
        calls.append((list(terms), session_id, before_turn, limit, found))
        return found

    store = Store(path)
    store.__enter__()
    engine = workloads.warmed_retrieval(store, settings, provider, "hash", WARMUP)
    sqlite_words.SqliteWords.word_scores = recording  # type: ignore[method-assign]
    try:
        for i in range(WARMUP, WARMUP + repeat):
            engine.run_turn(workloads.question(i))
            engine.between_turns()
    finally:
        sqlite_words.SqliteWords.word_scores = original  # type: ignore[method-assign]
    return calls, store, store.db


def cpu(action: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """CPU seconds of one `action(*args)` (the mean of AGAIN), and what it gave."""
    started = time.process_time()
    for _ in range(AGAIN):
        found = action(*args)
    return (time.process_time() - started) / AGAIN, found


def measure(turns: int, repeat: int) -> None:
    calls, store, db = recorded_calls(turns, repeat)
    try:
        held = Postings(db.conn)
        fts5 = python = 0.0
        same = differ = uncovered = 0
        for *asked, _ in calls:
            if any(held.stem(t) is None for t in asked[0]):
                uncovered += 1  # a prefix term, or one FTS5 splits: a phrase, not scored here
                continue
            spent, by_fts5 = cpu(db.word_scores, *asked)
            fts5 += spent
            spent, by_python = cpu(held.scores, *asked)
            python += spent
            same, differ = (same + 1, differ) if by_fts5 == by_python else (same, differ + 1)
        newest = [t for (t,) in db.conn.execute(
            "SELECT terms FROM messages_fts ORDER BY rowid DESC LIMIT 2")]
        upkeep, _ = cpu(held.tokens_of, newest)
    finally:
        store.__exit__(None, None, None)
    print(f"{turns:,} stored turns, {repeat} turns, {len(calls)} searches: identical {same},"
          f" different {differ}, not covered {uncovered}; CPU ms a turn: fts5"
          f" {fts5 / repeat * 1000:.2f}, python {python / repeat * 1000:.2f}, upkeep"
          f" {upkeep * 1000:.2f} (reading two messages' tokens, before adding them);"
          f" first read {held.read_seconds * 1000:.0f} ms ({len(held.postings):,} terms,"
          f" {held.count:,} rows)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000],
                        help="stored turns of each history")
    parser.add_argument("--repeat", type=int, default=30, help="turns played at each size")
    args = parser.parse_args()
    for turns in args.turns:
        measure(turns, args.repeat)


if __name__ == "__main__":
    main()
