"""Forking (store.forks) and renaming: messages copied verbatim, derived state only when true."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from cached_counts import cached_counts
from conftest import History
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matches import matches
from meter import metered
from vectors import vector_models

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.engine import Engine
from chatmem.errors import NotFound, StoreError, UsageError
from chatmem.memory.indexing import Indexing
from chatmem.store import Store
from chatmem.store.connection import fetch_value

TURNS = [
    "my name is Ana",
    "我们五月去杭州旅行，预算五千元",
    "my order is ORD-7731",
    "I live in Lisbon",
    "what did I order?",
]


def talk(engine: Engine, lines: list[str] = TURNS) -> Engine:
    for line in lines:
        engine.run_turn(line)
    return engine


def table_counts(history: History) -> dict[str, int]:
    """Row counts as another connection sees them."""
    with history.open() as other:
        return {t: fetch_value(other.db, f"SELECT count(*) FROM {t}")
                for t in ("sessions", "messages", "summaries", "facts", "strategy_state",
                          "token_counts", "turns")}


def shape(store: Store, session: str, upto: int | None = None) -> list[tuple]:
    record = store.sessions.session(session)
    return [(m.position, m.turn, m.role, m.content, m.external_id, m.created_at)
            for m in store.history.messages(record.id, 1, upto)]


def test_full_fork_copies_settings_messages_and_all_derived_state(
    store: Store, make_engine: Callable[..., Engine],
) -> None:
    engine = talk(make_engine("summary+entity", name="trip", system="Answer in one line."))
    source = store.sessions.session("trip")
    store.facts.upsert_fact("budget", "5000 EUR", scope="session", session_id=source.id)

    report = store.forks.fork_session("trip", "trip-b")

    fork = store.sessions.session("trip-b")
    assert (fork.strategy, fork.params, fork.system, fork.provider, fork.model, fork.user) == (
        source.strategy, source.params, source.system, source.provider, source.model,
        source.user)
    assert fork.id != source.id
    assert shape(store, "trip-b") == shape(store, "trip")
    assert (report.at_turn, report.source_turns, report.messages) == (5, 5, 10)
    assert [g.owner for g in report.copied] == ["facts", "summary"]
    assert report.rebuilt == [] and report.stated_facts == 1
    # Summaries point at the fork's own messages, never at the original's.
    new_ids = {m.id for m in store.history.messages(fork.id)}
    old = store.memory.summaries(source.id, "summary")
    new = store.memory.summaries(fork.id, "summary")
    assert [(s.version, s.text, s.anchors) for s in new] == [
        (s.version, s.text, s.anchors) for s in old]
    assert all(set(s.covered_ids) <= new_ids and s.last_message_id in new_ids for s in new)
    assert store.memory.strategy_state(fork.id, "summary") == store.memory.strategy_state(source.id,
                                                                                          "summary")
    assert store.memory.strategy_state(fork.id, "facts") == store.memory.strategy_state(source.id,
                                                                                        "facts")
    facts = {f.key: f for f in store.facts.facts(session_id=fork.id)}
    assert {k: f.value for k, f in facts.items()} == {
        f.key: f.value for f in store.facts.facts(session_id=source.id)}
    assert facts["order"].source_turn == 3
    order_message = next(m for m in store.history.messages(fork.id) if m.id == facts["order"].
                         source_message_id)
    assert order_message.content == "my order is ORD-7731"
    assert facts["budget"].source_message_id is None
    # The full-text index and the token counts come along (CJK as bigrams).
    hits = list(matches(store, fork.id, "杭州"))
    assert {m.id for m, _ in hits} <= new_ids
    assert sorted(m.content for m, _ in hits) == sorted(
        m.content for m, _ in matches(store, source.id, "杭州")) != []
    tokenizer = engine.counter.key
    assert sorted(cached_counts(store, fork.id, tokenizer).values()) == sorted(
        cached_counts(store, source.id, tokenizer).values())
    # Turn records stay with the original.
    assert store.turns.turns(fork.id) == [] and len(store.turns.turns(source.id)) == 5


def test_partial_fork_leaves_state_that_covers_later_turns_to_be_rebuilt(
    store: Store, make_engine: Callable[..., Engine], scripted,
) -> None:
    talk(make_engine("summary+entity", name="trip"))
    source = store.sessions.session("trip")
    store.facts.upsert_fact("locker", "B12", scope="session", session_id=source.id)

    report = store.forks.fork_session("trip", "early", at_turn=2)

    fork = store.sessions.session("early")
    assert shape(store, "early") == shape(store, "trip", 2)
    assert [(g.owner, g.covers_turn, g.summaries, g.facts) for g in report.rebuilt] == [
        ("facts", 5, 0, 4), ("summary", 5, 5, 0)]
    assert report.copied == []
    assert store.memory.summaries(fork.id) == []
    assert store.memory.strategy_state(fork.id, "summary") == {}
    assert store.memory.strategy_state(fork.id, "facts") == {}
    # The stated fact is the user's, not derived from a later message: it comes along.
    assert [(f.key, f.value) for f in store.facts.facts(session_id=fork.id)] == [("locker", "B12")]
    # The strategies rebuild from the copied messages before the fork's next turn.
    from registered import open_session

    from chatmem.config.settings import Settings

    engine = open_session(store, Settings(), scripted, "early")
    result = engine.run_turn("anything else?")
    first = store.memory.summaries(fork.id, "summary")[0]
    assert set(first.covered_ids) == {m.id for m in store.history.messages(fork.id) if m.turn <= 2}
    assert result.context.part("summary") is not None
    # Session facts from turns 1–2 only (facts stay in their session unless the user opts
    # in to a profile, so the name is one of them).
    assert {f.key: f.source_turn for f in store.facts.facts(session_id=fork.id)} == {
        "locker": None, "name": 1, "预算": 2}
    assert "ORD-7731" not in first.text and "Lisbon" not in first.text


def test_fork_copies_state_that_ends_at_the_fork_turn(
    store: Store, make_engine: Callable[..., Engine],
) -> None:
    engine = talk(make_engine("entity", name="trip"), TURNS[:3])
    source = store.sessions.session("trip")
    report = store.forks.fork_session("trip", "copy", at_turn=3)
    assert [(g.owner, g.covers_turn, g.facts) for g in report.copied] == [("facts", 3, 3)]
    talk(engine, TURNS[3:])
    later = store.forks.fork_session("trip", "copy2", at_turn=3)
    assert [g.owner for g in later.rebuilt] == ["facts"]
    assert len(store.facts.facts(session_id=store.sessions.session("copy").id)) == 3
    assert store.facts.facts(session_id=store.sessions.session("copy2").id) == []
    assert len(store.facts.facts(session_id=source.id)) == 4


def test_user_facts_are_shared_not_copied(store: Store, make_engine) -> None:
    talk(make_engine("window", name="trip"), TURNS[:1])
    store.facts.upsert_fact("language", "Portuguese", scope="user", user="ana")
    before = len(store.facts.facts(user="ana"))
    store.forks.fork_session("trip", "b")
    assert len(store.facts.facts(user="ana")) == before == 1


def test_fork_errors_write_nothing(store: Store, make_engine, history: History) -> None:
    talk(make_engine("summary", name="trip"), TURNS[:2])
    make_engine("window", name="taken")
    before = table_counts(history)
    with pytest.raises(NotFound, match=r"^no session named 'nope' in "):
        store.forks.fork_session("nope", "x")
    with pytest.raises(StoreError, match=r"^a session named 'taken' already exists$"):
        store.forks.fork_session("trip", "taken")
    with pytest.raises(UsageError, match=r"^a session name cannot be empty$"):
        store.forks.fork_session("trip", "  ")
    with pytest.raises(UsageError, match=r"^session 'trip' has 2 turns; it can be forked at "
                                         r"turns 0–2, not at turn 3$"):
        store.forks.fork_session("trip", "x", at_turn=3)
    with pytest.raises(UsageError, match=r"not at turn -1$"):
        store.forks.fork_session("trip", "x", at_turn=-1)
    assert table_counts(history) == before


def test_fork_at_turn_zero_keeps_settings_only(store: Store, make_engine) -> None:
    talk(make_engine("window", k=2, name="trip", system="Be kind."), TURNS[:2])
    report = store.forks.fork_session("trip", "fresh", at_turn=0)
    fork = store.sessions.session("fresh")
    assert (fork.strategy, fork.params, fork.system) == ("window", {"k": 2}, "Be kind.")
    assert store.history.messages(fork.id) == [] and report.messages == 0


@pytest.mark.parametrize("days", [365, 0, None])
def test_a_fork_keeps_the_sessions_own_retention(store: Store, make_engine,
                                                 days: int | None) -> None:
    """`sessions retention trip 1y` (or `forever`) holds for the fork too: it is the same
    conversation, and a fork falling back to the config's retention could be pruned first."""
    talk(make_engine("window", k=2, name="旅行"), TURNS[:2])
    store.retention.set_retention(store.sessions.session("旅行").id, days)
    store.forks.fork_session("旅行", "全部")
    store.forks.fork_session("旅行", "开头", at_turn=1)
    assert [store.sessions.session(name).retention_days for name in ("全部", "开头")] == [
        days, days]


def test_a_fork_is_independent_of_its_source(store: Store, make_engine, scripted) -> None:
    talk(make_engine("buffer", name="trip"), TURNS[:2])
    store.forks.fork_session("trip", "b")
    store.sessions.delete_session("trip")
    from registered import open_session

    from chatmem.config.settings import Settings

    engine = open_session(store, Settings(), scripted, "b")
    result = engine.run_turn("still there?")
    assert [m.turn for m in result.context.part("history").messages] == [1, 1, 2, 2]
    assert store.history.turn_count(store.sessions.session("b").id) == 3


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_fork_at_any_turn_copies_exactly_the_messages_up_to_it(
    store: Store, make_engine, data: st.DataObject,
) -> None:
    if store.sessions.find_session("src") is None:
        # A leading system message and a failed-free mix of roles, as import can make them.
        record = store.sessions.create_session("src", "buffer")
        store.history.import_messages(record.id, [
            {"role": "system", "content": "briefing"},
            *({"role": r, "content": f"{r} {i} 你好"} for i in range(6)
              for r in ("user", "assistant")),
            {"role": "user", "content": "dangling question"},
        ])
    last = store.history.turn_count(store.sessions.session("src").id)
    upto = data.draw(st.integers(min_value=0, max_value=last))
    name = f"f{next(_names)}"
    report = store.forks.fork_session("src", name, at_turn=upto)
    assert shape(store, name) == shape(store, "src", upto)
    assert report.messages == len(shape(store, "src", upto))


_names = itertools.count()


def test_rename_moves_everything_and_refuses_taken_names(
    store: Store, make_engine, history: History,
) -> None:
    talk(make_engine("summary", name="trip"), TURNS[:2])
    old = store.sessions.session("trip")
    renamed = store.sessions.rename_session("trip", "旅行")
    assert (renamed.id, renamed.name) == (old.id, "旅行")
    assert store.sessions.find_session("trip") is None
    assert len(store.history.messages(renamed.id)) == 4
    assert len(store.memory.summaries(renamed.id)) == 2
    make_engine("window", name="other")
    before = table_counts(history)
    with pytest.raises(StoreError, match=r"^a session named 'other' already exists$"):
        store.sessions.rename_session("旅行", "other")
    with pytest.raises(NotFound, match=r"^no session named 'trip' in "):
        store.sessions.rename_session("trip", "x")
    with pytest.raises(UsageError, match=r"^a session name cannot be empty$"):
        store.sessions.rename_session("旅行", "")
    assert table_counts(history) == before
    assert store.sessions.session("旅行").id == old.id


def test_bookkeeping_state_is_copied_but_not_reported(store: Store, make_engine) -> None:
    talk(make_engine("window", name="trip"), TURNS[:2])
    source = store.sessions.session("trip")
    store.memory.set_strategy_state(source.id, "counter", {"last": 7})
    report = store.forks.fork_session("trip", "b", at_turn=1)
    assert report.copied == [] and report.rebuilt == []
    assert store.memory.strategy_state(store.sessions.session("b").id, "counter") == {"last": 7}


def test_a_fork_brings_its_messages_vectors_and_does_not_embed_them_again(
    store: Store, make_engine
) -> None:
    from registered import create_strategy

    from chatmem.embeddings.hashed import HashEmbedder

    embedder = HashEmbedder()
    source = talk(make_engine("retrieval", name="trip", embedder=embedder, recent=0))
    source.indexing.finish(embedder)  # the backlog's work between turns, done now
    other = HashEmbedder(dimensions=64)  # a second model's vectors come along too
    source.indexing.finish(other)
    vectors = vector_models(store)
    assert vectors == {embedder.key: 10, other.key: 10}

    store.forks.fork_session("trip", "whole")
    store.forks.fork_session("trip", "part", at_turn=2)
    assert vector_models(store) == {embedder.key: 10 + 10 + 4, other.key: 10 + 10 + 4}
    originals = {(row.message_id, row.vector, row.context_vector)
                 for row in store.vectors.vector_rows(store.sessions.session("trip").id,
                                                      embedder.key)}
    trip, whole = store.sessions.session("trip"), store.sessions.session("whole")
    by_position = {m.id: m.position for m in store.history.messages(trip.id)}
    copies = {m.id: m.position for m in store.history.messages(whole.id)}
    assert {(copies[r.message_id], r.vector, r.context_vector)
            for r in store.vectors.vector_rows(store.sessions.session("whole").id,
                                               embedder.key)} == {
        (by_position[i], vector, context) for i, vector, context in originals}

    calls = embedder.calls
    fork = make_engine("retrieval", name="whole", embedder=embedder, recent=0)
    context = create_strategy("retrieval", {"recent": "0", "mode": "dense"}).build(
        fork.request("where do I live?"))
    assert embedder.calls == calls  # nothing re-embedded: only the question was
    assert "I live in Lisbon" in [m.content for m in context.part("recalled").messages]
    store.sessions.delete_session("trip")
    assert vector_models(store) == {embedder.key: 14, other.key: 14}


def _vectors_file(path: Path, others: int) -> Store:
    """A file with a session of 10 messages with vectors and one of `others` more."""
    store = Store(path)
    for name, count in (("small", 10), ("other", others)):
        session = store.sessions.create_session(name, "retrieval", {}, provider="scripted",
                                                model="m", system="", user="default")
        store.history.import_messages(session.id, [
            {"role": "user" if k % 2 == 0 else "assistant", "content": f"第{k}轮: locker {k}"}
            for k in range(count)])
        Indexing(store, session.id, background=False).finish(HashEmbedder())
    return store


def test_forking_a_session_reads_its_vectors_not_the_files(tmp_path: Path) -> None:
    """With message_vectors a rowid table (m023), copying a fork's vectors started from the
    model's vectors: every one of the file's, to find a short session's ten."""
    work = []
    for others in (0, 2_000):
        with _vectors_file(tmp_path / f"{others}.db", others) as store:
            with metered(store) as meter:
                store.forks.fork_session("small", "copy")
            work.append(meter.steps)
            copy = store.sessions.session("copy").id
            assert len(store.vectors.vector_batch(copy, HashEmbedder().key).positions) == 10
    assert work[1] < work[0] + 20, work
