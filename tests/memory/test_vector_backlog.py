"""The backlog of messages without vectors: a turn never waits for it, a build never
writes it, the next process resumes it, and its thread fails, stops and reports cleanly."""

from __future__ import annotations

import hashlib
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from gated_embedder import GatedEmbedder
from registered import create_strategy, open_session
from waiting import wait_until

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.engine import Engine
from chatmem.errors import ProviderError
from chatmem.indexing_notices import Failure, IndexingEvent, IndexingNotice
from chatmem.memory.vector_backlog import BATCH
from chatmem.memory.vector_rows import embed_pending, save_rows
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

SETTINGS = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="none"))
TURNS = 200
MESSAGES = 2 * TURNS
EARLIER = MESSAGES - 2
"""The messages recall ranks after the import: all but the recent turn's."""

class FailingEmbedder(HashEmbedder):
    """Embeds queries, fails on stored texts with an error that is not chatmem's."""

    def embed(self, texts: Sequence[str], *, query: bool = False):  # type: ignore[no-untyped-def]
        if not query:
            raise RuntimeError("the model file is truncated")
        return super().embed(texts, query=query)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A history file with a session of TURNS imported turns, English and Chinese, none
    embedded: made once for the module, each test given a copy (`path`)."""
    path = tmp_path_factory.mktemp("imported") / "history.db"
    with Store(path) as store:
        session = store.sessions.create_session("imported", "retrieval", system="Be brief.")
        messages = []
        for n in range(TURNS):
            day, minute = divmod(n, 60)
            when = f"2026-02-{day + 1:02d}T09:{minute:02d}:00+00:00"
            if n == 17:
                user, reply = "My brother moved to Porto last spring.", "Porto is lovely."
            elif n == 23:
                user, reply = "我们下个月去杭州看西湖。", "杭州的西湖很美。"
            else:
                user = f"Note {n}: the weekly groceries list and the bus timetable again."
                reply = f"Noted, item {n} of the weekly routine."
            messages += [{"role": "user", "content": user, "ts": when},
                         {"role": "assistant", "content": reply, "ts": when}]
        store.history.import_messages(session.id, messages)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # closed: one file whole
    return path


@pytest.fixture
def path(imported: Path, tmp_path: Path) -> Path:
    """A copy of `imported` of the test's own."""
    path = tmp_path / "history.db"
    shutil.copyfile(imported, path)
    return path


def chat_engine(store: Store, embedder: HashEmbedder) -> Engine:
    return open_session(store, SETTINGS, ScriptedProvider(), "imported", strategy="retrieval",
                        embedder=embedder)


def inline_engine(store: Store, embedder: HashEmbedder) -> Engine:
    """An engine as replay and eval make it: every message embedded before the next build."""
    session = store.sessions.find_session("imported")
    assert session is not None
    return Engine(store, session, ScriptedProvider(), create_strategy("retrieval"),
                  embedder=embedder, background_indexing=False)


def missing(store: Store, engine: Engine, embedder: HashEmbedder) -> int:
    return store.vectors.count_without_vectors(embedder.key, engine.session.id)


def recalled(context) -> list[str]:  # type: ignore[no-untyped-def]
    part = context.part("recalled")
    return [] if part is None else [m.content for m in part.messages]


@pytest.mark.parametrize(("question", "expected"), [
    ("Where did my brother move?", "My brother moved to Porto last spring."),
    ("我们什么时候去杭州？", "我们下个月去杭州看西湖。"),
])
def test_the_first_turn_after_an_import_does_not_wait_and_the_next_process_resumes(
    path: Path, question: str, expected: str
) -> None:
    gate = GatedEmbedder()
    with Store(path) as store:
        engine = chat_engine(store, gate)
        result = engine.run_turn(question)
        # The reply is committed while not one stored text has been embedded.
        assert result.status == "ok" and gate.finished == 0
        assert missing(store, engine, gate) == MESSAGES + 2
        assert expected in recalled(result.context)  # ranked by words meanwhile
        reason = result.context.part("recalled").reason
        assert (reason.embedded, reason.candidates) == (0, EARLIER)
        # The thread embeds one batch (two calls: own and context vectors) while the
        # user types; the process then ends with the rest still to do.
        gate.allow(2)
        gate.wait_finished(2)
        gate.allow(1_000)
        left = engine.indexing.close()
        assert len(left) == 1 and left[0].model == gate.key and left[0].error is None
        assert left[0].missing == missing(store, engine, gate)
        assert 0 < left[0].missing <= MESSAGES + 2 - BATCH
        done = MESSAGES + 2 - left[0].missing
    second = HashEmbedder()
    assert second.key == gate.key
    with Store(path) as store:
        engine = chat_engine(store, second)
        context = engine.build_context(question)
        reason = context.part("recalled").reason
        assert (reason.embedded, reason.candidates) == (min(done, EARLIER + 2), EARLIER + 2)
        assert [r["dense"] is not None for r in context.recall].count(True) >= 1
        engine.run_turn("And the bus timetable?")
        engine.indexing.finish(second)
        # Only what the first process left, and the new turn: nothing embedded twice.
        assert second.calls == left[0].missing + 2
        assert missing(store, engine, second) == 0
        assert engine.indexing.close() == []
        context = engine.build_context(question)
        assert context.part("recalled").reason.embedded is None
        assert all(r["dense"] is not None for r in context.recall)


def test_a_build_reads_vectors_and_never_writes_them(path: Path) -> None:
    embedder = HashEmbedder()
    with Store(path) as store:
        engine = chat_engine(store, embedder)
        strategy = create_strategy("retrieval")
        # Half the history embedded, as a backlog stopped midway leaves it.
        pending = store.vectors.texts_without_vectors(embedder.key, engine.session.id,
                                                      limit=MESSAGES // 2)
        save_rows(store, embedder.key, embed_pending(embedder, pending))
        strategy.build(engine.request("Where did my brother move?"))  # counts tokens once
        calls = embedder.calls
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        context = strategy.build(engine.request("Where did my brother move?"))
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
        assert embedder.calls == calls  # only the query was embedded
        rows = {r["id"]: r for r in context.recall}
        embedded = {p.message_id for p in pending}
        assert rows and all((r["dense"] is not None) == (key in embedded)
                            for key, r in rows.items())
        reason = context.part("recalled").reason
        assert (reason.embedded, reason.candidates) == (MESSAGES // 2, EARLIER)


def test_a_failing_embedder_stops_the_backlog_with_one_notice(path: Path) -> None:
    embedder = FailingEmbedder()
    with Store(path) as store:
        engine = chat_engine(store, embedder)
        first = engine.run_turn("Where did my brother move?")
        assert first.status == "ok"
        def failed() -> Failure | None:
            status = engine.indexing.status(embedder)
            return None if status is None else status.error

        wait_until(lambda: failed() is not None, "the backlog's failure")
        truncated = Failure("the model file is truncated", unexpected="RuntimeError")
        assert failed() == truncated
        second = engine.run_turn("And the bus?")
        third = engine.run_turn("And the groceries?")
        told = [n for n in second.notices + third.notices if isinstance(n, IndexingNotice)]
        assert told == [IndexingNotice(IndexingEvent.STOPPED, truncated)]
        assert third.status == "ok" and store.history.turn_count(engine.session.id) == TURNS + 3
        [left] = engine.indexing.close()
        assert left.error == truncated
        assert left.missing == missing(store, engine, embedder) == MESSAGES + 6


def test_a_process_ending_after_its_turn_names_the_failing_embedder(path: Path) -> None:
    # `ask` closes the engine right after its turn: the thread's first batch was a race
    # with that close, and a broken embedder (a plugin's) went unnamed when it lost.
    truncated = Failure("the model file is truncated", unexpected="RuntimeError")
    for question in ("Where did my brother move?", "我们什么时候去杭州？", "And the bus?"):
        embedder = FailingEmbedder()
        with Store(path) as store:
            engine = chat_engine(store, embedder)
            assert engine.run_turn(question).status == "ok"
            [left] = engine.indexing.close()
            assert left.error == truncated
            assert left.missing == missing(store, engine, embedder)


def test_a_process_ending_after_its_turn_stores_the_first_batch(path: Path) -> None:
    embedder = HashEmbedder()
    with Store(path) as store:
        engine = chat_engine(store, embedder)
        assert engine.run_turn("我们什么时候去杭州？").status == "ok"
        [left] = engine.indexing.close()
        assert left.error is None
        assert left.missing == missing(store, engine, embedder) <= MESSAGES + 2 - BATCH


def backlog_threads(session_id: int) -> list[threading.Thread]:
    """The backlog threads of this session (ids restart with each test's file)."""
    return [t for t in threading.enumerate() if t.name == f"chatmem-embed-{session_id}"
            and t not in EARLIER_THREADS]


EARLIER_THREADS: set[threading.Thread] = set()


@pytest.fixture(autouse=True)
def earlier_threads() -> None:
    """Threads other tests' engines left (an engine a test does not close keeps its
    backlog's thread while it has work) are not this test's."""
    EARLIER_THREADS.clear()
    EARLIER_THREADS.update(threading.enumerate())


def test_a_strategy_change_keeps_one_backlog_per_session_and_model(path: Path) -> None:
    gate = GatedEmbedder()
    with Store(path) as store:
        engine = chat_engine(store, gate)
        engine.run_turn("Where did my brother move?")
        engine.set_strategy(create_strategy("retrieval", {"gap_hours": "1", "recent": "1"}))
        engine.run_turn("And the bus?")
        assert len(backlog_threads(engine.session.id)) == 1
        gate.allow(10_000)
        engine.indexing.finish(gate)
        assert backlog_threads(engine.session.id) == []
        # Each message embedded once, though two strategies asked.
        assert gate.calls == MESSAGES + 4


def test_replays_embed_before_each_build_so_results_do_not_depend_on_timing(
    path: Path
) -> None:
    embedder = HashEmbedder()
    with Store(path) as store:
        engine = inline_engine(store, embedder)
        session = engine.session
        engine.replay_turn("Where did my brother move?", "Porto.")
        assert missing(store, engine, embedder) == 0
        assert backlog_threads(session.id) == []
        context = engine.build_context("Where did my brother move?")
        assert context.part("recalled").reason.embedded is None


def test_an_inline_run_reads_only_the_messages_committed_since_its_last_look(
    path: Path
) -> None:
    from meter import metered

    embedder = HashEmbedder()
    with Store(path) as store:
        engine = inline_engine(store, embedder)
        session = engine.session
        engine.update_memory()  # the whole imported history, once
        calls = embedder.calls
        store.history.import_messages(session.id, [{"role": "user", "content": "One more thing."},
                                                   {"role": "assistant", "content": "Yes?"}])
        with metered(store) as meter:
            engine.update_memory()
        assert embedder.calls == calls + 2  # the two new messages, once each
        assert missing(store, engine, embedder) == 0
        # Found without a scan of the session (that takes about 7,000 VM instructions).
        assert meter.steps < MESSAGES // 20


def spied_looks(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the backlog's reads of messages without vectors, as they happen."""
    looks: list[int] = []
    original = store.vectors.pending_and_last  # the backlog's one read (with the last id)

    def looked(*args: Any, **kwargs: Any) -> Any:
        found, last = original(*args, **kwargs)
        looks.append(len(found))
        return found, last

    monkeypatch.setattr(store.vectors, "pending_and_last", looked)
    return looks


def test_an_inline_turn_looks_for_messages_without_vectors_once(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A turn's two new messages fit one read: a second look, which finds nothing, was a
    # statement of every turn that benchmarks/run.py times.
    embedder = HashEmbedder()
    with Store(path) as store:
        engine = inline_engine(store, embedder)
        engine.update_memory()
        looks = spied_looks(store, monkeypatch)
        engine.run_turn("Where did my brother move?")
        # The catch-up before the build finds nothing new; after the commit, the turn's two.
        assert looks == [0, 2]
        assert missing(store, engine, embedder) == 0


def test_an_inline_run_reads_on_while_its_reads_come_back_full(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = HashEmbedder()
    monkeypatch.setattr("chatmem.memory.vector_backlog.READ", 64)
    with Store(path) as store:
        engine = inline_engine(store, embedder)
        looks = spied_looks(store, monkeypatch)
        engine.update_memory()
        # Six full reads, then a short one that ends it; nothing is left without a vector.
        assert looks == [64] * (MESSAGES // 64) + [MESSAGES % 64]
        assert missing(store, engine, embedder) == 0


class ThreadEndsFirst:
    """A store whose second look-up of stored vectors (inside the engine's second commit)
    first lets the gated thread finish its batch and end: the moment, on a busy machine,
    when the batch is in memory (neither stored nor handed to a live thread) and the next
    batch needs its last vector."""

    def __init__(self, store: Store, embedder: GatedEmbedder, thread_name: str) -> None:
        self._store = store
        self.vectors = _VectorsEndingTheThread(store.vectors, embedder, thread_name)

    @property
    def lookups(self) -> int:
        return self.vectors.lookups

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._store, name)


class _VectorsEndingTheThread:
    def __init__(self, vectors: Any, embedder: GatedEmbedder, thread_name: str) -> None:
        self._vectors, self._embedder, self._thread_name = vectors, embedder, thread_name
        self.lookups = 0

    def cached_vectors(self, model: str, digests: list[str],
                       dimensions: int = 0) -> dict[str, bytes]:
        self.lookups += 1
        if self.lookups == 2:
            self._embedder.allow(1)
            self._embedder.wait_finished(1)
            wait_until(lambda: all(t.name != self._thread_name for t in threading.enumerate()),
                       "the embedding thread ended")
        return self._vectors.cached_vectors(model, digests,  # type: ignore[no-any-return]
                                            dimensions)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self._vectors, name)


def test_a_message_is_embedded_once_when_its_batch_s_thread_ends_before_the_next_commit(
    tmp_path: Path
) -> None:
    # Seen under load: 43 embeddings for 42 messages in test_retrieval's count, the last
    # message of a finished thread's batch embedded again as the previous message of the
    # next batch's first.
    from chatmem.memory.vector_backlog import VectorBacklog

    embedder = GatedEmbedder()
    with Store(tmp_path / "history.db") as store:
        session = store.sessions.create_session("gated", "retrieval")
        store.history.import_messages(session.id, [{"role": "user", "content": "First question."},
                                                   {"role": "assistant",
                                                    "content": "First answer."}])
        gated = ThreadEndsFirst(store, embedder, f"chatmem-embed-{session.id}")
        backlog = VectorBacklog(gated, session.id, embedder)  # type: ignore[arg-type]
        backlog.after_commit()  # the thread starts and waits at its batch's embedding
        store.history.import_messages(session.id, [{"role": "user", "content": "Second question."},
                                                   {"role": "assistant",
                                                    "content": "Second answer."}])
        backlog.after_commit()  # the thread ends meanwhile (ThreadEndsFirst); a new one starts
        assert gated.lookups == 2
        embedder.allow(1)
        embedder.wait_finished(2)
        status = backlog.close()
        assert status.missing == 0
        assert embedder.calls == 4  # each message's own text, once
        assert store.vectors.count_without_vectors(embedder.key, session.id) == 0


@pytest.mark.parametrize("read", [4096, 64])
def test_the_first_look_counts_the_backlog_from_its_read_when_that_held_all_of_it(
        path: Path, monkeypatch: pytest.MonkeyPatch, read: int) -> None:
    """The first look after opening reads up to READ messages without vectors; when it
    found fewer, that is the whole backlog and the file is not read again to count it."""
    from chatmem.memory import vector_backlog

    monkeypatch.setattr(vector_backlog, "READ", read)
    gate = GatedEmbedder()  # nothing is embedded until the test has looked
    with Store(path) as store:
        counted: list[int] = []
        count = store.vectors.count_without_vectors

        def counting(model: str, session_id: int | None = None, *, dimensions: int = 0,
                     after_id: int = 0) -> int:
            counted.append(session_id or 0)
            return count(model, session_id, dimensions=dimensions, after_id=after_id)

        monkeypatch.setattr(store.vectors, "count_without_vectors", counting)
        engine = chat_engine(store, gate)
        engine.run_turn("Where did my brother move?")
        status = engine.indexing.status(gate)
        assert status is not None and status.missing == MESSAGES + 2
        # 402 messages without vectors: one read holds them all at READ 4,096, not at 64.
        assert counted == ([] if read > MESSAGES + 2 else [engine.session.id])
        gate.allow(10_000)
        engine.indexing.close()


class SwitchedEmbedder(HashEmbedder):
    """Fails on stored texts while `down`, as an endpoint that refuses connections; counts
    the attempts."""

    def __init__(self) -> None:
        super().__init__()
        self.down = True
        self.attempts = 0

    def embed(self, texts: Sequence[str], *, query: bool = False):  # type: ignore[no-untyped-def]
        if not query:
            self.attempts += 1
            if self.down:
                raise ProviderError("embeddings at http://127.0.0.1:9/v1 failed: 连接被拒绝")
        return super().embed(texts, query=query)


def test_an_inline_run_whose_embedder_is_down_backs_off_then_catches_up(path: Path) -> None:
    """A replay or an eval asked a dead endpoint at every turn (~1.3 s each: its client
    retries); after N failures in a row it asks at every 2^N-th commit, and embeds
    everything once the endpoint answers."""
    embedder = SwitchedEmbedder()
    with Store(path) as store:
        engine = inline_engine(store, embedder)
        retried_at = []
        for n in range(1, 31):
            said = f"第{n}个问题: where did my brother move?"
            notices = engine.replay_turn(said, "Porto.").notices
            if any(isinstance(x, IndexingNotice) and x.event is IndexingEvent.RETRYING
                   for x in notices):
                retried_at.append(n)
        assert retried_at == [1, 3, 7, 15]
        assert embedder.attempts == 4
        assert missing(store, engine, embedder) == MESSAGES + 60
        context = engine.build_context("Where did my brother move?")
        # Ranked meanwhile: the messages without a vector by their words, and it says so.
        assert context.part("recalled").reason.embedded == 0
        embedder.down = False
        engine.replay_turn("第31个问题", "好的。")  # 16 commits after the last try
        assert embedder.attempts > 4
        assert missing(store, engine, embedder) == 0
        context = engine.build_context("Where did my brother move?")
        assert context.part("recalled").reason.embedded is None
