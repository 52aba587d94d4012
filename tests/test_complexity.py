"""A turn's work does not grow with the history: counted, not timed.

Every strategy and every two-part combination runs turns on a session of
SMALL and of LARGE stored turns (imported in bulk, then caught up). The store
counts the SQL statements a turn runs, the rows it reads back and the SQLite
virtual-machine steps it takes; a counting tokenizer counts the texts it
tokenizes. At LARGE turns a turn must do no more than at SMALL (VM steps may
grow by the B-tree depth). The SQL a turn runs is also checked with EXPLAIN
QUERY PLAN: no full scan of a table that grows.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from activity_log import Recording
from meter import metered
from registered import BUILT_IN, open_session

from chatmem import fts
from chatmem.activity import Work as ActivityWork
from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.memory.indexing import Indexing
from chatmem.memory.summary_memory import FOLD_TOKENS
from chatmem.memory.vector_rows import embed_pending
from chatmem.notices import SummaryUpdated
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store
from chatmem.store.connection import fetch_value
from chatmem.store.recall import POSTINGS

SMALL, MEDIUM, LARGE = 100, 2500, 5000
TURNS = 16
"""Turns measured per strategy: more than one summary-buffer prune cycle."""
GROWING = {"sessions", "messages", "turns", "token_counts", "summaries", "facts",
           "strategy_state"}
PAIRS = ["+".join(pair) for pair in itertools.combinations(BUILT_IN, 2)]
STRATEGIES = [*BUILT_IN, *PAIRS]
FLAT = [s for s in STRATEGIES if "buffer" not in s.split("+")]
"""buffer sends the whole history by definition: its work grows, and is checked to."""
USER = [
    "My order number is ORD-{n} and I want to change the delivery address to 12 Oak Street.",
    "我们五月去杭州旅行，预算五千元，请帮我安排第{n}天的行程。",
    "Can you summarize what we decided about item {n}? Keep the dates and amounts exact.",
]
ASSISTANT = [
    "Noted: order ORD-{n}. I will update the delivery address and confirm by email.",
    "好的，第{n}天：上午游西湖，中午在楼外楼吃饭，预算约八百元。",
    "For item {n} we agreed on delivery on March 15 and a budget of 5,000 yuan.",
]


class CountingCounter:
    """The engine's tokenizer, counting the texts it is asked to tokenize."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.key, self.approximate = inner.key, inner.approximate
        self.priming, self.additive = inner.priming, inner.additive
        self.texts = 0

    def count_text(self, text: str) -> int:
        self.texts += 1
        return int(self.inner.count_text(text))

    def count_message(self, role: str, content: str) -> int:
        self.texts += 1
        return int(self.inner.count_message(role, content))

    def count_messages(self, messages: Any) -> int:
        messages = list(messages)
        self.texts += len(messages)
        return int(self.inner.count_messages(messages))


@dataclass(frozen=True)
class Work:
    statements: int
    rows: int
    index_reads: int
    steps: int
    tokenized: int


KINDS = ("statements", "rows", "index_reads", "steps", "tokenized")


class StubEmbedder:
    """Vectors for recall by meaning without a model: the same text, the same vector.
    What is measured is what the store reads, not what a model computes."""

    key, dimensions = "stub:16", 16

    def embed(self, texts: Any, *, query: bool = False) -> Any:
        import zlib

        import numpy as np

        rows = np.stack([np.random.default_rng(zlib.crc32(t.encode())).normal(size=16)
                         for t in texts]).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def conversation(turns: int) -> Iterator[dict[str, str]]:
    for n in range(1, turns + 1):
        yield {"role": "user", "content": USER[n % 3].format(n=n)}
        yield {"role": "assistant", "content": ASSISTANT[n % 3].format(n=n)}


STATEFUL = ("entity", "summary", "summary-buffer")
"""Their state (facts, summaries) is kept per strategy, combinations share it: each is
caught up once per file, so every test starts from a caught-up session."""
SETTINGS = Settings(embeddings=EmbeddingsSection(provider="none"))
"""Recall by words: no embedding model to load (recall by meaning is measured elsewhere)."""


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """History files of SMALL, MEDIUM and LARGE turns, imported in bulk and caught up.

    Built as one history growing: each size is the one before with the turns that follow
    it imported and caught up (conversation(MEDIUM) begins with conversation(SMALL)), then
    copied. Caught up in one go, 100 + 2,500 + 5,000 turns went through the strategies."""
    folder = tmp_path_factory.mktemp("complexity")
    growing, paths, done = folder / "growing.db", {}, 0
    for turns in (SMALL, MEDIUM, LARGE):
        with Store(growing) as store:
            session = (store.sessions.session("long") if done else
                       store.sessions.create_session("long", "window", system="Be brief."))
            store.history.import_messages(
                session.id, list(itertools.islice(conversation(turns), 2 * done, None)))
            stub = StubEmbedder()
            pending = store.vectors.texts_without_vectors(stub.key, session.id)
            store.vectors.save_vectors(stub.key, stub.dimensions, embed_pending(stub, pending))
            for strategy in STATEFUL:
                open_session(store, SETTINGS, ScriptedProvider(), "long",
                             strategy=strategy).catch_up()
        paths[turns], done = folder / f"{turns}.db", turns
        shutil.copyfile(growing, paths[turns])
    return paths


def opened(stored: dict[int, Path], turns: int, strategy: str, tmp_path: Path,
           embedder: StubEmbedder | None = None, **params: str) -> Engine:
    path = tmp_path / f"{strategy}-{turns}.db"
    shutil.copyfile(stored[turns], path)
    store = Store(path)
    engine = open_session(store, SETTINGS, ScriptedProvider(), "long", strategy=strategy,
                          params=params, embedder=embedder)  # type: ignore[arg-type]
    engine.counter = CountingCounter(engine.counter)
    engine.catch_up()
    return engine


def turn_work(engine: Engine, text: str) -> Work:
    counter = engine.counter
    assert isinstance(counter, CountingCounter)
    before = counter.texts
    with metered(engine.store) as meter:
        engine.run_turn(text)
    return Work(meter.statements, meter.rows, meter.index_reads, meter.steps,
                counter.texts - before)


def question(i: int) -> str:
    """Asks about an earlier turn (41–56, there at every size), so recall has matches."""
    return USER[i % 3].format(n=41 + i)


def most_work(engine: Engine, *, settled: bool = False) -> Work:
    """The most each kind of work any of TURNS turns took (a prune turn included). With
    `settled`, the background indexing has stored every vector before each turn (unmetered):
    on a loaded machine it lagged by one batch or two, and the turn after stored them."""
    works = []
    for i in range(TURNS):
        if settled:
            engine.indexing.finish(engine.embedder)
        works.append(turn_work(engine, question(i)))
    return Work(*(max(getattr(w, f) for w in works) for f in KINDS))


def work_by_size(stored: dict[int, Path], tmp_path: Path, strategy: str,
                 embedder: StubEmbedder | None = None, *, settled: bool = False,
                 **params: str) -> dict[int, Work]:
    work = {}
    for turns in (SMALL, MEDIUM, LARGE):
        engine = opened(stored, turns, strategy, tmp_path, embedder, **params)
        try:
            engine.run_turn("warm up: the reply of the last imported turn gets counted")
            work[turns] = most_work(engine, settled=settled)
        finally:
            engine.store.close()
    return work


def assert_flat(work: dict[int, Work], sizes: tuple[int, int, int] = (SMALL, MEDIUM, LARGE),
                kinds: tuple[str, ...] = ("statements", "rows", "index_reads", "tokenized")
                ) -> None:
    # At 5,000 turns a turn does no more than at 100 or at 2,500 (a 100-turn session
    # may hold less than a turn reads at most: fewer pins than their share of the
    # budget, fewer candidates than recall's pool). The slack is for where the
    # measured turns fall in a prune cycle (which turn folds, which pins are new), a
    # few statements or texts; a read that grew with the history would add thousands.
    # Reads inside the full-text index count too: a search scores a bounded number
    # of entries, however many messages share its words.
    small, medium, large = (work[size] for size in sizes)
    for kind in kinds:
        most = max(getattr(small, kind), getattr(medium, kind))
        assert getattr(large, kind) <= most * 1.1 + 8, (kind, work)
    if not large.steps:
        return  # PostgreSQL: no step counter (its plans are checked with EXPLAIN below)
    # SQLite's own steps grow with the depth of its B-trees (log n), never with n.
    assert large.steps <= max(small.steps, medium.steps) * 1.25 + 20, work


@pytest.mark.parametrize("strategy", FLAT)
def test_a_turn_does_no_more_work_at_5000_turns_than_at_100_or_2500(
    stored: dict[int, Path], tmp_path: Path, strategy: str
) -> None:
    assert_flat(work_by_size(stored, tmp_path, strategy))


def test_recall_by_meaning_reads_only_new_vectors_after_the_first_build(
    stored: dict[int, Path], tmp_path: Path
) -> None:
    # The dense scores themselves are one pass over the vectors in numpy (the cost of
    # a vector search); what is read from the file, and built in Python, is bounded.
    work = work_by_size(stored, tmp_path, "retrieval", StubEmbedder(), settled=True,
                        mode="hybrid")
    assert_flat(work)
    # Not even the 100-turn file's reads: the same work at any size.
    assert work[LARGE].rows <= work[SMALL].rows * 1.1 + 8, work


def test_a_hybrid_turn_that_embeds_its_own_messages_does_the_same_work_at_any_size(
    stored: dict[int, Path], tmp_path: Path
) -> None:
    # What benchmarks/run.py measures against LangChain's VectorStoreRetrieverMemory:
    # build by words and meaning, commit, then embed and store the turn's two messages
    # before the next build (inline, as replay does), every kind of work counted.
    work = {}
    for turns in (SMALL, MEDIUM, LARGE):
        engine = opened(stored, turns, "retrieval", tmp_path, StubEmbedder(), mode="hybrid")
        engine.background_indexing = False
        engine.indexing = Indexing(engine.store, engine.session.id, background=False)
        try:
            engine.run_turn("warm up: the reply of the last imported turn gets counted")
            last = engine.store.vectors.count_without_vectors(StubEmbedder.key, engine.session.id)
            work[turns] = most_work(engine)
            # Each turn's messages were embedded and stored before the next build.
            assert engine.store.vectors.count_without_vectors(StubEmbedder.key,
                                                              engine.session.id) == last == 0
        finally:
            engine.store.close()
    assert_flat(work)


def test_a_client_s_request_does_the_same_work_at_any_size(
    stored: dict[int, Path], tmp_path: Path
) -> None:
    # `chatmem serve` and the MCP tools take a turn per request: the client's history is
    # adopted (a client that sends its own window stores nothing), the last turn read,
    # the turn run. Counting the session's whole history per request grew with it.
    from chatmem.app import Workspace
    from chatmem.app.adopted_history import adopt_history
    from chatmem.app.client_history import ClientMessage
    from chatmem.app.conversations import start_conversation
    from chatmem.app.sessions import last_turn

    window = [ClientMessage("user", "My order is ORD-7731."),
              ClientMessage("assistant", "好的，已记下。"), ClientMessage("user", "还有吗？")]
    work = {}
    for turns in (SMALL, MEDIUM, LARGE):
        path = tmp_path / f"client-{turns}.db"
        shutil.copyfile(stored[turns], path)
        settings = dataclasses.replace(SETTINGS, provider="scripted", db=str(path))
        with Workspace(settings) as ws:
            engine = start_conversation(ws, "long", settings=settings)
            try:
                engine.settle()
                engine.run_turn("warm up: the reply of the last imported turn gets counted")
                counted = []
                for i in range(TURNS):
                    with metered(ws.store) as meter:
                        adopt_history(ws, "long", window)
                        last_turn(ws, engine.session)
                        engine.run_turn(question(i))
                    counted.append(Work(meter.statements, meter.rows, meter.index_reads,
                                        meter.steps, 0))
                held = ws.store.history.message_count(engine.session.id, at_most=10**9)
            finally:
                engine.finish()
        assert held == 2 * (turns + 1 + TURNS)  # the client's window stored nothing
        work[turns] = Work(*(max(getattr(w, f) for w in counted) for f in KINDS))
    assert_flat(work)


def test_a_search_across_sessions_reads_as_much_of_a_long_history_as_of_a_short_one(
    stored: dict[int, Path]
) -> None:
    # The MCP tool `search_memory` without a conversation first finds the sessions to
    # rank. Scoring "order" (in a third of all messages) read all its entries; a query
    # of such words alone still finds the session that said them last.
    reads = {}
    for turns in (SMALL, LARGE):
        with Store(stored[turns]) as store:
            for query in ("ORD-42 order", "order"):
                store.logs.sessions_matching(query, limit=5)  # FTS5 reads its configuration
                with metered(store) as meter:
                    assert store.logs.sessions_matching(query, limit=5) == ["long"]
                reads[turns, query] = meter.index_reads + meter.steps
    for query in ("ORD-42 order", "order"):
        assert reads[LARGE, query] <= reads[SMALL, query] * 1.25 + 20, reads


def test_a_search_for_a_word_said_thousands_of_times_reads_as_much_as_at_100_turns(
    stored: dict[int, Path], tmp_path: Path
) -> None:
    # "order" and "预算" are said in two of every three turns: at 5,000 turns too often
    # for recall to score, which left the MCP tool `search_memory` finding nothing. It
    # finds the newest messages saying them, reading as many entries as it returns.
    from chatmem.app import Workspace
    from chatmem.app.search import SEARCH_HITS, found_in, search_engine

    reads = {}
    for turns in (SMALL, LARGE):
        path = tmp_path / f"search-{turns}.db"
        shutil.copyfile(stored[turns], path)
        settings = dataclasses.replace(SETTINGS, provider="scripted", db=str(path))
        with Workspace(settings) as ws:
            engine = search_engine(ws, "long")
            for query in ("order", "预算"):
                found_in(engine, query)  # FTS5 reads its configuration
                with metered(ws.store) as meter:
                    found = found_in(engine, query)
                assert len(found) >= SEARCH_HITS // 2 and all(
                    query in f.content.lower() for f in found), (turns, query)
                reads[turns, query] = (meter.statements, meter.index_reads + meter.steps)
                if turns == LARGE:  # where it was said last, newest first
                    said = [f.turn or 0 for f in found]
                    assert said == sorted(said, reverse=True) and said[0] >= LARGE - 2
    for query in ("order", "预算"):
        (statements, read), (statements_l, read_l) = reads[SMALL, query], reads[LARGE, query]
        assert statements_l <= statements + 2 and read_l <= read * 1.25 + 20, reads


def test_a_conversation_s_newest_matches_skip_another_conversation_s_entries(
    tmp_path: Path,
) -> None:
    # The newest messages of this conversation saying a word, however often another
    # conversation had since then says it: its entries are never read.
    reads = {}
    for other_says in (2 * POSTINGS, 6 * POSTINGS):
        with Store(tmp_path / f"h{other_says}.db") as store:
            mine = store.sessions.create_session("mine", "retrieval", {})
            other = store.sessions.create_session("other", "retrieval", {})
            store.history.import_messages(mine.id, [
                {"role": "user", "content": f"Alice and I went to museum {n}."}
                for n in range(POSTINGS)])
            store.history.import_messages(other.id, [
                {"role": "user", "content": f"Alice and I planned garden bed {n}."}
                for n in range(other_says)])
            store.history.import_messages(mine.id, [
                {"role": "user", "content": "Alice said her flat is on Rue Oberkampf."}])
            store.recall.newest_matches(mine.id, "Alice", limit=50)  # FTS5's configuration
            with metered(store) as meter:
                found = store.recall.newest_matches(mine.id, "Alice", limit=50)
            assert [m.position for m in found] == list(range(POSTINGS + 1, POSTINGS - 49, -1))
            reads[other_says] = meter.index_reads + meter.steps
    assert reads[6 * POSTINGS] <= reads[2 * POSTINGS] * 1.25 + 20, reads


def test_a_question_s_terms_are_counted_in_one_statement_however_many_there_are(
    stored: dict[int, Path]
) -> None:
    # A Chinese question has a term per pair of characters: one statement per term was a
    # third of a retrieval turn's statements.
    with Store(stored[SMALL]) as store:
        terms = fts.query_terms(USER[1].format(n=42))
        assert len(terms) > 15
        # FTS5 reads its configuration on a connection's first use of the index: once per
        # process, not per question.
        store.recall.rare_terms(terms[:1], POSTINGS)
        with metered(store) as meter:
            kept = store.recall.rare_terms(terms, POSTINGS)
        assert meter.statements == 1
        # The same terms as counting them one by one keeps.
        one_by_one = sorted((store.db.count_words_matches([t], POSTINGS // 2)[0], t) for t in terms)
        expected, used = [], 0
        for found, term in one_by_one:
            if not 0 < found <= POSTINGS // 2:
                continue
            if used + found > POSTINGS:
                break
            expected.append(term)
            used += found
        assert kept == expected and kept


def test_buffer_work_grows_with_the_history_as_it_must(
    stored: dict[int, Path], tmp_path: Path
) -> None:
    rows = {}
    for turns in (SMALL, LARGE):
        engine = opened(stored, turns, "buffer", tmp_path)
        try:
            rows[turns] = turn_work(engine, "hello").rows
        finally:
            engine.store.close()
    assert rows[LARGE] > 10 * rows[SMALL]


_SCAN = re.compile(r"^SCAN (\w+)")
_ALIAS = re.compile(
    r"(?:FROM|JOIN)\s+(\w+)\s+(?:AS\s+)?(?!WHERE|JOIN|ON|LEFT|ORDER|LIMIT|GROUP)(\w+)", re.I)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_no_query_a_turn_runs_scans_a_growing_table(
    stored: dict[int, Path], tmp_path: Path, strategy: str
) -> None:
    engine = opened(stored, SMALL, strategy, tmp_path)
    try:
        engine.run_turn("warm up")
        ran: list[str] = []
        engine.store.db.conn.set_trace_callback(ran.append)
        for i in range(TURNS):
            engine.run_turn(question(i))
        engine.store.db.conn.set_trace_callback(None)
        queries = {sql for sql in ran if re.match(r"\s*(SELECT|UPDATE|DELETE|WITH)", sql, re.I)}
        assert queries
        for sql in sorted(queries):
            plan = [row[3] for row in engine.store.db.conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
            tables = {alias: table for table, alias in _ALIAS.findall(sql)}
            scans = [d for d in plan if (m := _SCAN.match(d))
                     and tables.get(m.group(1), m.group(1)) in GROWING]
            assert not scans, f"{sql}\n  plan: {plan}"
    finally:
        engine.store.close()


def test_an_imported_history_is_caught_up_in_bounded_batches_with_progress(
    stored: dict[int, Path], tmp_path: Path
) -> None:
    with Store(stored[LARGE]) as store:
        session = store.sessions.session("long")
        counter = ScriptedProvider().token_counter()
        tokens = {m.id: counter.count_message(m.role, m.content)
                  for m in store.history.messages(session.id)}
        for name, limit in (("summary", FOLD_TOKENS), ("summary-buffer", 2 * 2000)):
            versions = store.memory.summaries(session.id, name)
            assert len(versions) > 20, name  # many calls, none over its batch size
            for version in versions:
                covered = sum(tokens[i] for i in version.covered_ids)
                assert 0 < covered <= limit, (name, version.version)
    path = tmp_path / "fresh.db"
    with Store(path) as store:
        fresh = store.sessions.create_session("fresh", "window")
        store.history.import_messages(fresh.id, list(conversation(300)))
        activity = Recording()
        engine = open_session(store, SETTINGS, ScriptedProvider(), "fresh", strategy="summary",
                              activity=activity)
        notices = engine.catch_up()
        assert len(activity.steps) > 3
        assert activity.steps[0].first == 1 and activity.steps[0].last > 1
        assert {(s.work, s.of) for s in activity.steps} == {(ActivityWork.SUMMARIZING, 300)}
        assert isinstance(notices[0], SummaryUpdated)
        assert notices[0].calls == len(activity.steps)


# -- the same on PostgreSQL: statements and rows counted, plans read with EXPLAIN -----------

PG_SIZES = (100, 500, 1500)
"""Smaller than SQLite's: each history is built through the store and the strategies'
catch-up (about 20 ms a turn here), and 15 times the turns still shows work that grows."""
PG_STRATEGIES = [s for s in BUILT_IN if s != "buffer"]
"""Each strategy alone (their pairs run on SQLite above): the PostgreSQL statements differ
from SQLite's in the dialect, not in which a strategy runs."""
_SEQ_SCAN = re.compile(r"Seq Scan on (\w+)")
SCANNED_ROWS = 500
"""A table with more rows than this is read through an index, never whole."""
PG_GROWING = {"messages", "turns", "token_counts", "summaries", "facts", "message_vectors",
              "message_words"}
"""Tables that grow with a session's turns (sessions and strategy_state hold a row or a few
per session here: the planner rightly reads such a table whole)."""


@pytest.fixture(scope="module")
def pg_stored(pg_server: Any, pg_template: str) -> Iterator[dict[int, str]]:
    """Databases of PG_SIZES turns, built as the SQLite files above (one history growing,
    copied at each size), caught up and ANALYZEd: templates each test copies."""
    growing, names, done = pg_server.create_database(pg_template), {}, 0
    for turns in PG_SIZES:
        with Store(pg_server.url(growing)) as store:
            session = (store.sessions.session("long") if done else
                       store.sessions.create_session("long", "window", system="Be brief."))
            store.history.import_messages(
                session.id, list(itertools.islice(conversation(turns), 2 * done, None)))
            stub = StubEmbedder()
            pending = store.vectors.texts_without_vectors(stub.key, session.id)
            store.vectors.save_vectors(stub.key, stub.dimensions, embed_pending(stub, pending))
            for strategy in STATEFUL:
                open_session(store, SETTINGS, ScriptedProvider(), "long",
                             strategy=strategy).catch_up()
            # An imported history has no turn rows: another session's failed turns give
            # the table thousands, so reading this session's turns must be selective.
            other = (store.sessions.session("other") if done else
                     store.sessions.create_session("other", "window"))
            with store.write():
                store.db.execute(
                    "INSERT INTO turns (session_id, number, status, input, context, strategy,"
                    " created_at) SELECT ?, n, 'failed', 'x', '{\"parts\": []}', 'window', ?"
                    " FROM generate_series(?::integer, ?::integer) AS n",
                    [other.id, store.now(), 2 * done + 1, 2 * turns])
            store.db.execute("ANALYZE")
        names[turns], done = pg_server.create_database(growing), turns
    yield names
    for name in [growing, *names.values()]:
        pg_server.drop_database(name)


def pg_opened(pg_server: Any, template: str, strategy: str,
              embedder: StubEmbedder | None = None, **params: str) -> Engine:
    """An engine on a copy of `template`; pg_closed closes it and drops the copy."""
    store = Store(pg_server.url(pg_server.create_database(template)))
    engine = open_session(store, SETTINGS, ScriptedProvider(), "long", strategy=strategy,
                          params=params, embedder=embedder)  # type: ignore[arg-type]
    engine.counter = CountingCounter(engine.counter)
    engine.catch_up()
    return engine


def pg_closed(pg_server: Any, engine: Engine) -> None:
    """Close the engine and drop its database: two dozen copies of histories of up to
    1,500 turns, left on the server, were what its shutdown at the end of the run waited
    for."""
    name = engine.store.db.execute("SELECT current_database()").fetchone()[0]
    engine.store.close()
    pg_server.drop_database(name)


def pg_work_by_size(pg_server: Any, pg_stored: dict[int, str], strategy: str,
                    embedder: StubEmbedder | None = None, **params: str) -> dict[int, Work]:
    work = {}
    for turns in PG_SIZES:
        engine = pg_opened(pg_server, pg_stored[turns], strategy, embedder, **params)
        try:
            engine.run_turn("warm up: the reply of the last imported turn gets counted")
            work[turns] = most_work(engine)
        finally:
            pg_closed(pg_server, engine)
    assert all(w.statements and w.rows for w in work.values()), work  # the meter counted
    return work


@pytest.mark.parametrize("strategy", PG_STRATEGIES)
def test_on_postgres_a_turn_does_no_more_work_at_5000_turns(
    pg_server: Any, pg_stored: dict[int, str], strategy: str
) -> None:
    params = {"mode": "hybrid"} if strategy == "retrieval" else {}
    embedder = StubEmbedder() if strategy == "retrieval" else None
    # What the store does: statements and rows. The texts a turn tokenizes are the engine's
    # (the same code on either backend), checked above on SQLite at sizes past recall's
    # candidate pool; these histories are smaller, so recall's pool still fills with them.
    assert_flat(pg_work_by_size(pg_server, pg_stored, strategy, embedder, **params), PG_SIZES,
                kinds=("statements", "rows"))


@pytest.mark.parametrize("strategy", PG_STRATEGIES)
def test_on_postgres_no_query_a_turn_runs_scans_a_growing_table(
    pg_server: Any, pg_stored: dict[int, str], strategy: str
) -> None:
    # The largest history: thousands of rows in the growing tables, ANALYZEd, so the
    # planner chooses as for a real history. A table of a few rows it rightly reads whole:
    # only a scan of a table holding over SCANNED_ROWS rows counts.
    embedder = StubEmbedder() if strategy == "retrieval" else None
    params = {"mode": "hybrid"} if strategy == "retrieval" else {}
    engine = pg_opened(pg_server, pg_stored[PG_SIZES[-1]], strategy, embedder, **params)
    backend = engine.store.db
    try:
        engine.run_turn("warm up")
        ran: list[tuple[str, tuple[Any, ...]]] = []
        backend.observe = lambda sql, params, cursor: ran.append((sql, tuple(params)))
        for i in range(TURNS):
            engine.run_turn(question(i))
        backend.observe = None
        # One of each statement text (its first parameters): the plan is the text's. A
        # full-text match (@@) is left out: its terms match at most recall.POSTINGS entries
        # (rare_terms), half of this history's, where reading the table is the right plan;
        # its rows are counted flat above.
        # An INSERT reading a table (a turn's number from its session's turns, 2dc684c5)
        # is a read too: its plan is checked as a SELECT's is.
        queries = {sql: params for sql, params in reversed(ran)
                   if (re.match(r"\s*(SELECT|UPDATE|DELETE|WITH)", sql, re.I)
                       or re.match(r"\s*INSERT\b.*\bSELECT\b", sql, re.I | re.S))
                   and "pg_advisory" not in sql and "@@" not in sql}
        assert queries
        large = {t for t in PG_GROWING
                 if fetch_value(engine.store.db, f"SELECT count(*) FROM {t}") > SCANNED_ROWS}
        assert {"messages", "message_words", "message_vectors"} <= large
        read = {t for sql in queries for t in large if re.search(rf"\b{t}\b", sql)}
        assert {"messages", "turns"} <= read, read  # the per-turn reads were checked
        for sql, params in queries.items():
            plan = "\n".join(row[0] for row in backend.execute(f"EXPLAIN {sql}", params))
            scans = [t for t in _SEQ_SCAN.findall(plan) if t in large]
            assert not scans, f"{sql}\n  plan:\n{plan}"
    finally:
        pg_closed(pg_server, engine)


def test_a_word_another_conversation_says_thousands_of_times_costs_this_one_a_bounded_read(
    tmp_path: Path,
) -> None:
    # A word too common in the whole index to score is looked for in this conversation
    # alone: among its newest entries in the conversation's span of the index, however
    # many the other conversation has.
    reads = {}
    for other_says in (2 * POSTINGS, 6 * POSTINGS):
        with Store(tmp_path / f"h{other_says}.db") as store:
            mine = store.sessions.create_session("mine", "retrieval", {})
            other = store.sessions.create_session("other", "retrieval", {})
            store.history.import_messages(mine.id, [
                {"role": "user", "content": f"Trip day {n}: museums and a concert."}
                for n in range(200)])
            store.history.import_messages(other.id, [
                {"role": "user", "content": f"Alice and I planned garden bed {n}."}
                for n in range(other_says)])
            store.history.import_messages(mine.id, [
                {"role": "user", "content": "Alice said her flat is on Rue Oberkampf."},
                {"role": "assistant", "content": "Noted."}])
            query = "Does Alice live on Oberkampf?"
            store.recall.word_matches(mine.id, query, before_turn=999,
                                      limit=300)  # FTS5 reads its configuration
            with metered(store) as meter:
                found = store.recall.word_matches(mine.id, query, before_turn=999, limit=300)
            assert list(found.scores) == [201]
            reads[other_says] = meter.index_reads + meter.steps
    assert reads[6 * POSTINGS] <= reads[2 * POSTINGS] * 1.25 + 20, reads
