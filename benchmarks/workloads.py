"""What benchmarks/run.py measures, one cell at a time, each in its own process.

A cell is one memory (a chatmem strategy or a LangChain classic class) over
a history file holding N stored turns of mixed English/Chinese text. It
returns plain data (JSON): per-turn times, model calls, bytes stored. run.py
starts every cell as `python run.py --worker SPEC` so that a cell that does
not finish in time can be stopped without losing the rest of the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

USER = [
    "My order number is ORD-{n} and I want to change the delivery address to 12 Oak Street.",
    "我们五月去杭州旅行，预算五千元，请帮我安排第{n}天的行程。",
    "Can you summarize what we decided about item {n}? Keep the dates and amounts exact.",
]
ASSISTANT = [
    "Noted: order ORD-{n}. I will update the delivery address to 12 Oak Street and confirm "
    "by email once the warehouse accepts the change.",
    "好的，第{n}天：上午游西湖，中午在楼外楼吃饭，下午去灵隐寺，晚上看《印象西湖》，预算约八百元。",
    "For item {n} we agreed on delivery on March 15, a budget of 5,000 yuan and a refund "
    "if it arrives late.",
]
SYSTEM = "You are a helpful assistant."


def conversation(turns: int, start: int = 1) -> Iterator[dict[str, str]]:
    for n in range(start, start + turns):
        yield {"role": "user", "content": USER[n % 3].format(n=n)}
        yield {"role": "assistant", "content": ASSISTANT[n % 3].format(n=n)}


def question(i: int) -> str:
    """A new user input per measured turn, in the same mix as the stored history, asking
    about an earlier item (41–90, stored at every size): recall has something to find."""
    return USER[i % 3].format(n=41 + i % 50)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def summary(samples: list[float], cpu: list[float] | None = None,
            parts: dict[str, list[float]] | None = None) -> dict[str, Any]:
    """Median and p95 of wall-clock ms; with `cpu` (the same turns' CPU ms), its median
    and p95 too: on a loaded machine the clock also counts other processes. `parts`:
    what `cpu` adds up (a client's and its server's CPU), each's median."""
    shown = {"median_ms": statistics.median(samples), "p95_ms": percentile(samples, 0.95),
             "samples": len(samples)}
    if cpu:
        measured_cpu = cpu[-len(samples):]
        shown["cpu_median_ms"] = statistics.median(measured_cpu)
        shown["cpu_p95_ms"] = percentile(measured_cpu, 0.95)
    for name, values in (parts or {}).items():
        shown[f"{name}_cpu_median_ms"] = statistics.median(values[-len(samples):])
    return shown


def measured(action: Callable[[int], float], repeat: int, seconds: float) -> list[float]:
    """Up to `repeat` samples within `seconds` (at least one). The first run warms up
    caches and is dropped, unless it alone takes over a second: then the work itself,
    not a cold cache, is what it measured, and waiting for another would waste minutes."""
    first = action(0)
    samples = [] if first < 1000 else [first]
    started = time.perf_counter()
    i = 1
    while len(samples) < repeat and (not samples or time.perf_counter() - started < seconds):
        samples.append(action(i))
        i += 1
    return samples


COUNTED_TURNS = 5
"""Turns a chatmem cell runs after the timed ones to count statements and rows read."""


def phase(name: str) -> None:
    """Tell run.py how far a cell got, so a timeout says where it stopped."""
    print(f"phase {name}", flush=True)


# -- stored histories -----------------------------------------------------------------


@contextlib.contextmanager
def serving(settings: Any) -> Iterator[str]:
    """`chatmem serve`'s app over `settings`, in this process on a port of its own (real
    HTTP, uvicorn): its `http://127.0.0.1:PORT`, the server stopped on leaving."""
    import socket
    import threading

    import uvicorn

    from chatmem.serve.proxy import build_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(build_app(settings), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(60)
        sock.close()


def is_url(location: str | Path) -> bool:
    return str(location).startswith(("postgresql://", "postgres://"))


def build_chatmem_base(location: str | Path, turns: int, beside: int = 0) -> dict[str, Any]:
    """A history (file or PostgreSQL database) with one session of `turns` imported turns,
    and with `beside`, another of that many stored after it (the measured session's turns
    then come after the other's: a history of several conversations)."""
    from chatmem.store import Store

    started = time.perf_counter()
    with Store(location) as store:
        for name, count, start in (("bench", turns, 1), ("beside", beside, turns + 1)):
            if not count:
                continue
            session = store.sessions.create_session(name, "window", {}, provider="scripted",
                                                    model="scripted", system=SYSTEM)
            batch: list[dict[str, str]] = []
            for message in conversation(count, start):
                batch.append(message)
                if len(batch) == 20_000:
                    store.history.import_messages(session.id, batch)
                    batch = []
            if batch:
                store.history.import_messages(session.id, batch)
        seconds = time.perf_counter() - started
        size = stored_bytes(store)
    return {"seconds": seconds, "bytes": size}


def add_vectors(source: Path, path: Path, embedder_name: str) -> dict[str, Any]:
    """A copy of the history at `source` with every message's vectors stored, as
    `chatmem index` stores them (message and context vector, by the same functions)."""
    from chatmem.memory.vector_rows import embed_pending, save_rows
    from chatmem.plugins import load_registries
    from chatmem.store import Store

    copy_base(source, path)
    embedder = load_registries().create_embedder(embedder_name)
    started = time.perf_counter()
    done = last = 0
    with Store(path) as store:
        while pending := store.vectors.texts_without_vectors(embedder.key, limit=5000,
                                                             after_id=last):
            save_rows(store, embedder.key, embed_pending(embedder, pending))
            last, done = pending[-1].message_id, done + len(pending)
        size = stored_bytes(store)
    return {"seconds": time.perf_counter() - started, "bytes": size, "embedded": done}


def build_langchain_base(path: Path, turns: int) -> dict[str, Any]:
    from langchain_community.chat_message_histories import SQLChatMessageHistory
    from langchain_core.messages import AIMessage, HumanMessage

    started = time.perf_counter()
    history = SQLChatMessageHistory(session_id="bench", connection=f"sqlite:///{path}")
    batch = []
    for m in conversation(turns):
        batch.append(HumanMessage(m["content"]) if m["role"] == "user"
                     else AIMessage(m["content"]))
        if len(batch) == 20_000:
            history.add_messages(batch)
            batch = []
    if batch:
        history.add_messages(batch)
    return {"seconds": time.perf_counter() - started, "bytes": path.stat().st_size}


def stored_bytes(store: Any) -> int:
    """Bytes the file's live pages take (free pages excluded), after a WAL checkpoint;
    on PostgreSQL, the database's size on the server's disk (tables, indexes, TOAST)."""
    store.db.fold_log()
    if store.db.kind == "postgresql":
        return int(store.db.execute("SELECT pg_database_size(current_database())")
                   .fetchone()[0])
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    free = store.db.execute("PRAGMA freelist_count").fetchone()[0]
    size = store.db.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * size)


# -- chatmem --------------------------------------------------------------------------


class TimedProvider:
    """The scripted provider, with the time spent inside it (the "model") kept apart."""

    def __init__(self) -> None:
        from chatmem.providers.scripted import ScriptedProvider

        self.inner = ScriptedProvider()
        self.name, self.model = self.inner.name, self.inner.model
        self.seconds = self.cpu_seconds = 0.0
        self.calls: dict[str, int] = {}

    def _timed(self, purpose: str, work: Callable[[], Any]) -> Any:
        self.calls[purpose] = self.calls.get(purpose, 0) + 1
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return work()
        finally:
            self.seconds += time.perf_counter() - started
            self.cpu_seconds += time.process_time() - cpu

    def stream(self, messages: Any) -> Any:
        def whole_reply() -> tuple[Any, list[str]]:
            reply = self.inner.stream(messages)
            return reply, list(reply)

        return Streamed(*self._timed("chat", whole_reply))

    def complete(self, messages: Any, *, purpose: str = "chat") -> str:
        return str(self._timed(purpose, lambda: self.inner.complete(messages, purpose=purpose)))

    def token_counter(self) -> Any:
        return self.inner.token_counter()

    def close(self) -> None:
        pass


class Streamed:
    """A reply already read from the provider, streamed again to the engine."""

    def __init__(self, reply: Any, chunks: list[str]) -> None:
        self.usage, self.rendered_prompt, self._chunks = reply.usage, reply.rendered_prompt, chunks

    def __iter__(self) -> Iterator[str]:
        return iter(self._chunks)

    def close(self) -> None:
        pass


def copy_base(base: Path, path: Path) -> None:
    """Start a cell from the base file alone. A cell stopped at its time limit leaves its
    WAL behind, and SQLite would replay that other database's pages into this copy."""
    for sidecar in ("-wal", "-shm", "-journal"):
        Path(f"{path}{sidecar}").unlink(missing_ok=True)
    shutil.copyfile(base, path)
    # On disk before the cell starts: else the first fsync (a fold of the log) waits
    # for the whole copy to be written back, and the cell times the copy.
    with path.open("rb+") as copied:
        os.fsync(copied.fileno())


def warmed_retrieval(store: Any, settings: Any, provider: Any, embedder: str,
                     warmup: int) -> Any:
    """The benchmark session's `retrieval` engine as chatmem_cell opens its hash and words-only
    cells (`embedder` "none": words only), caught up, after `warmup` turns each followed by
    the upkeep between turns: the engine turn_profile and turn_tails time."""
    from chatmem.engine import open_session
    from chatmem.memory.indexing import Indexing
    from chatmem.plugins import load_registries

    registries = load_registries()
    engine = open_session(store, settings, provider, "bench",
                          strategy=registries.strategies.parse("retrieval", None),
                          strategies=registries.strategies,
                          embedder=None if embedder == "none" else
                          registries.create_embedder(embedder, settings))
    if embedder != "none":
        engine.background_indexing = False
        engine.indexing = Indexing(store, engine.session.id, background=False)
    engine.catch_up()
    for i in range(warmup):
        engine.run_turn(question(i))
        engine.between_turns()
    return engine


def chatmem_cell(spec: dict[str, Any]) -> dict[str, Any]:
    """Per-turn overhead of one strategy: build + commit + memory update, model excluded."""
    import sys

    from chatmem.config.sections import EmbeddingsSection
    from chatmem.config.settings import Settings
    from chatmem.engine import open_session
    from chatmem.memory.indexing import Indexing
    from chatmem.plugins import load_registries
    from chatmem.store import Store

    # The statement counter is test code since e91f3de (tests/meter.py), not the package's.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from meter import metered

    location: str | Path = spec["db"]
    if not is_url(location):  # a PostgreSQL cell's database is a copy run.py made already
        location = Path(location)
        copy_base(Path(spec["base"]), location)
    provider = TimedProvider()
    embedder = spec.get("embedder", "none")
    with Store(location) as store:
        # Without an embedder, recall by words: a model's time per message is measured by
        # benchmarks/recall_cost.py; here it would time the embedder, not the memory. With
        # `hash` (deterministic, no model), the fused words + meaning path is measured, and
        # each turn embeds its new messages before the next build (as replay and eval do)
        # rather than in a background thread whose timing would blur the figures.
        settings = Settings(embeddings=EmbeddingsSection(provider=embedder))
        # Since f3630f3 the engine's embedder is handed in (the Workspace opens it), not
        # read from the settings: without it the hybrid cell measured words alone.
        strategies = load_registries().strategies
        engine = open_session(store, settings, provider, "bench",
                              strategy=strategies.parse(spec["strategy"], spec.get("params")),
                              strategies=strategies,
                              embedder=None if embedder == "none" else
                              load_registries().create_embedder(embedder, settings))
        if embedder != "none":
            engine.background_indexing = False
            engine.indexing = Indexing(store, engine.session.id, background=False)
        phase("catch-up")
        started = time.perf_counter()
        engine.catch_up()
        catch_up = time.perf_counter() - started
        catch_up_calls = sum(provider.calls.values())
        phase("turns")
        before = stored_bytes(store)
        turns_run = 0

        def build(i: int) -> float:
            started = time.perf_counter()
            engine.build_context(question(i))
            return (time.perf_counter() - started) * 1000

        cpu: list[float] = []
        upkeep: list[float] = []
        took_ms: list[float] = []

        def turn(i: int) -> float:
            nonlocal turns_run
            provider.seconds = provider.cpu_seconds = 0.0
            started, cpu_started = time.perf_counter(), time.process_time()
            engine.run_turn(question(i))
            turns_run += 1
            cpu.append((time.process_time() - cpu_started - provider.cpu_seconds) * 1000)
            took = (time.perf_counter() - started - provider.seconds) * 1000
            took_ms.append(took)
            # What the chat does once a turn is shown, while the user reads (merging a
            # little of the word index, folding the log every few turns): timed apart,
            # and reported beside the turn.
            started = time.perf_counter()
            engine.between_turns()
            upkeep.append((time.perf_counter() - started) * 1000)
            return took

        calls_before = dict(provider.calls)
        turn_samples = measured(turn, spec["repeat"], spec["seconds"])
        # Statements and rows are counted on turns of their own (the first turn, which
        # fills the process's caches, is behind them): the meter's callbacks, one per
        # statement, per row read and per 100 VM steps, are its own work, which the
        # peers' cells do not carry.
        with metered(store) as meter:
            for i in range(turns_run, turns_run + COUNTED_TURNS):
                engine.run_turn(question(i))
                engine.between_turns()
        turns_run += COUNTED_TURNS
        calls = {k: v - calls_before.get(k, 0) for k, v in provider.calls.items()}
        grown = stored_bytes(store) - before
        build_samples = measured(build, spec["repeat"], spec["seconds"])
    return {
        "turn": summary(turn_samples, cpu), "build": summary(build_samples),
        "catch_up_s": catch_up, "catch_up_model_calls": catch_up_calls,
        # The first turn after opening (left out of `turn`): it reads what later ones keep.
        "first_turn_ms": took_ms[0],
        "between_turns_ms": statistics.mean(upkeep[-len(turn_samples):]),
        "model_calls_per_turn": {k: v / turns_run for k, v in calls.items() if v},
        "bytes_per_turn": grown / turns_run,
        "statements_per_turn": meter.statements / COUNTED_TURNS,
        "rows_per_turn": meter.rows / COUNTED_TURNS,
    }


# -- LangChain classic ---------------------------------------------------------------------


def langchain_cell(spec: dict[str, Any]) -> dict[str, Any]:
    import warnings

    # Their classes are deprecated but still shipped; the warnings would bury the table.
    warnings.filterwarnings("ignore")
    from langchain_classic import memory as lc
    from langchain_community.chat_message_histories import SQLChatMessageHistory
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models.fake import FakeListLLM
    from langchain_core.vectorstores import InMemoryVectorStore

    from chatmem.tokens import counter_for_model

    counter = counter_for_model(None, exact=True)

    class CountingLLM(FakeListLLM):
        """A deterministic fake model that counts with cl100k, like chatmem (LangChain's
        default counter would download GPT-2's tokenizer)."""

        def get_num_tokens(self, text: str) -> int:
            return counter.count_text(text)

    def llm() -> CountingLLM:
        return CountingLLM(responses=["The user discussed orders, a trip and item budgets."])

    kind, turns = spec["memory"], spec["turns"]
    phase("setup")
    if kind == "VectorStoreRetrieverMemory":
        # In memory: LangChain's persistent vector stores need packages beyond the registry's
        # offline reach (or a server); this is its fastest configuration, not its slowest.
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=256))
        pairs = list(conversation(turns))
        texts = [f"input: {pairs[i]['content']}\noutput: {pairs[i + 1]['content']}"
                 for i in range(0, len(pairs), 2)]
        for start in range(0, len(texts), 5000):
            store.add_texts(texts[start:start + 5000])
        memory: Any = lc.VectorStoreRetrieverMemory(
            retriever=store.as_retriever(search_kwargs={"k": 4}))
    else:
        path = Path(spec["db"])
        copy_base(Path(spec["base"]), path)
        history = SQLChatMessageHistory(session_id="bench", connection=f"sqlite:///{path}")
        if kind == "ConversationBufferWindowMemory":
            memory = lc.ConversationBufferWindowMemory(k=5, chat_memory=history,
                                                       return_messages=True)
        elif kind == "ConversationTokenBufferMemory":
            memory = lc.ConversationTokenBufferMemory(llm=llm(), max_token_limit=2000,
                                                      chat_memory=history, return_messages=True)
        else:
            memory = lc.ConversationSummaryBufferMemory(llm=llm(), max_token_limit=2000,
                                                        chat_memory=history,
                                                        return_messages=True)
    phase("turns")

    return {"turn": langchain_turns(memory, spec)}


def langchain_turns(memory: Any, spec: dict[str, Any],
                    server: ServerProcesses | None = None) -> dict[str, Any]:
    """A LangChain memory's turns as the peers are timed: load its variables for the
    question, save the exchange (wall and CPU per turn). With `server`, the CPU a turn
    costs its database server is added to its own (and each is shown too)."""
    cpu: list[float] = []
    client: list[float] = []
    served: list[float] = []

    def turn(i: int) -> float:
        text = question(i)
        server_started = server.cpu_ns() if server else 0
        started, cpu_started = time.perf_counter(), time.process_time()
        memory.load_memory_variables({"input": text})
        memory.save_context({"input": text}, {"output": f"echo: {text}"})
        client.append((time.process_time() - cpu_started) * 1000)
        wall = (time.perf_counter() - started) * 1000
        served.append((server.cpu_ns() - server_started) / 1e6 if server else 0.0)
        cpu.append(client[-1] + served[-1])
        return wall

    samples = measured(turn, spec["repeat"], spec["seconds"])
    return summary(samples, cpu, {"client": client, "server": served} if server else None)


def durable_cell(spec: dict[str, Any]) -> dict[str, Any]:
    """LangChain's VectorStoreRetrieverMemory (k=4, DeterministicFakeEmbedding 256) over a
    store that survives the process: Chroma persistent (`spec["folder"]`), or PGVector
    on PostgreSQL (`spec["url"]`, exact scan: no index). Runs in the peers' own virtual
    environment (run.py --peers-venv: langchain-postgres pulls an older pgvector adapter
    than chatmem's), so it imports nothing from chatmem."""
    import warnings

    warnings.filterwarnings("ignore")
    from langchain_classic.memory import VectorStoreRetrieverMemory
    from langchain_core.embeddings import DeterministicFakeEmbedding

    embedding = DeterministicFakeEmbedding(size=256)
    phase("setup")
    store: Any
    if spec["store"] == "chroma":
        from langchain_chroma import Chroma

        store = Chroma(collection_name="bench", embedding_function=embedding,
                       persist_directory=spec["folder"])
    else:
        from langchain_postgres import PGVector

        store = PGVector(embeddings=embedding, collection_name="bench",
                         connection=spec["url"].replace("postgresql://",
                                                        "postgresql+psycopg://", 1),
                         use_jsonb=True)
    pairs = list(conversation(spec["turns"]))
    texts = [f"input: {pairs[i]['content']}\noutput: {pairs[i + 1]['content']}"
             for i in range(0, len(pairs), 2)]
    for start in range(0, len(texts), 1000):
        store.add_texts(texts[start:start + 1000])
    memory = VectorStoreRetrieverMemory(retriever=store.as_retriever(search_kwargs={"k": 4}))
    # PGVector's work is shared with its server: both CPUs are counted, as chatmem's SQLite
    # works inside the process that measures it. Chroma persistent works in-process.
    server = server_processes(spec["url"]) if "url" in spec else None
    phase("turns")
    return {"turn": langchain_turns(memory, spec, server)}


class ServerProcesses:
    """A PostgreSQL server's processes (the postmaster and its children: the backends,
    WAL writer, checkpointer...), whose CPU time is read from /proc/PID/schedstat in
    nanoseconds (/proc/PID/stat counts 10 ms ticks, coarser than a turn)."""

    def __init__(self, postmaster: int) -> None:
        self.postmaster = postmaster

    def pids(self) -> list[int]:
        children = Path(f"/proc/{self.postmaster}/task/{self.postmaster}/children")
        return [self.postmaster, *(int(p) for p in children.read_text().split())]

    def cpu_ns(self) -> int:
        total = 0
        for pid in self.pids():
            # A worker may end between the listing and the read.
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        return total


def server_processes(url: str) -> ServerProcesses:
    """The processes of the server at `url` (on this machine: the benchmark's own)."""
    import psycopg

    with psycopg.connect(url) as conn:
        backend = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        # Its parent, the postmaster: the fourth field, after the parenthesized name.
        stat = Path(f"/proc/{backend}/stat").read_text()
    return ServerProcesses(int(stat.rsplit(")", 1)[1].split()[1]))


# -- replay, start-up, token counting ----------------------------------------------------------


def replay_cell(spec: dict[str, Any]) -> dict[str, Any]:
    """Turns per second of `chatmem replay --keep-replies` on a transcript, one strategy."""
    from chatmem.evaluation.replay import replay
    from chatmem.plugins import load_registries
    from chatmem.providers.scripted import ScriptedProvider
    from chatmem.transcripts.reader import read_transcript

    transcript = read_transcript(Path(spec["transcript"]))
    chosen = load_registries().strategies.parse(spec["strategy"])
    started = time.perf_counter()
    [run] = replay(transcript, [chosen], chat_provider=ScriptedProvider(), keep_replies=True)
    seconds = time.perf_counter() - started
    return {"turns": run.turns, "seconds": seconds, "turns_per_s": run.turns / seconds,
            "model_calls": run.model_calls}


def tokens_cell(spec: dict[str, Any]) -> dict[str, Any]:
    """chatmem's per-message counting next to raw tiktoken on the same texts."""
    import tiktoken

    from chatmem.tokens import OFFLINE_CL100K, counter_for_model

    texts = [m["content"] for m in conversation(spec["messages"] // 2)]
    counter = counter_for_model(None, exact=True)
    encoding = tiktoken.get_encoding(OFFLINE_CL100K)
    total = sum(len(t) for t in encoding.encode_ordinary_batch(texts))

    def best_of(action: Callable[[], object]) -> float:
        times = []
        for _ in range(spec["repeat"]):
            started = time.perf_counter()
            action()
            times.append(time.perf_counter() - started)
        return min(times)

    ours = best_of(lambda: [counter.count_text(t) for t in texts])
    raw = best_of(lambda: encoding.encode_ordinary_batch(texts))
    raw_single = best_of(lambda: [encoding.encode_ordinary(t) for t in texts])
    return {"messages": len(texts), "tokens": total,
            "chatmem_tokens_per_s": total / ours, "tiktoken_batch_tokens_per_s": total / raw,
            "tiktoken_single_tokens_per_s": total / raw_single}


CELLS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "chatmem": chatmem_cell,
    "langchain": langchain_cell,
    "durable": durable_cell,
    "replay": replay_cell,
    "tokens": tokens_cell,
}
