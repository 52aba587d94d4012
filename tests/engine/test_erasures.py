"""An engine kept open (a chat, a server's conversation) follows what another connection takes
out of its session's memory (`sessions.erasures`, Engine.follow_erasures), on every backend
of the `history` fixture: after a purge it ranks as an engine opened afresh would, its
backlog embeds again what the purge left without vectors, and a session deleted meanwhile
is said, not written into."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from acting_providers import ActsWhile
from conftest import History
from pg import PostgresServer
from registered import create_strategy, open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.engine import Engine
from chatmem.errors import ExitCode, NotFound, StoreError, StoreFailure
from chatmem.memory.indexing import Indexing
from chatmem.providers.base import Purpose
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store, TurnStatus

SAID = ["My friend José lives in Porto near the river.", "We sailed to the islands in May.",
        "José 住在波尔图，靠近河边。", "The blue boat was rented for 300 euros.",
        "我们五月去杭州，订了西湖边的酒店。", "José cooks bacalhau every Sunday."]
QUESTION = "Where does José live, and what does he cook?"


def erase_jose(text: str) -> str:
    return text.replace("José", "[erased]")


def kept_engine(store: Store, name: str = "kept") -> Engine[Store]:
    settings = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="none"))
    engine = open_session(store, settings, ScriptedProvider(), name, strategy="retrieval",
                          params={"recent": "1", "max_tokens": "400"},
                          embedder=HashEmbedder())
    # Inline, so what is embedded does not depend on a thread's timing.
    engine.background_indexing = False
    engine.indexing = Indexing(store, engine.session.id, background=False)
    return engine


def chat(engine: Engine[Store]) -> None:
    for text in SAID:
        engine.run_turn(text)


def recall_rows(engine: Engine[Store]) -> list[tuple[Any, ...]]:
    context = engine.build_context(QUESTION)
    return [(r["id"], r["dense"], r["fused"], r["kept"]) for r in context.recall]


def test_the_counter_counts_what_left_a_sessions_memory(store: Store, history: History) -> None:
    engine = kept_engine(store)
    chat(engine)
    sid = engine.session.id
    assert store.sessions.erasures(sid) == 0
    with history.open() as other:
        other.redactions.rewrite_stored_text([sid], None, ["nobody said this"], erase_jose)
        assert other.sessions.erasures(sid) == 0  # nothing changed, nothing counted
        other.redactions.rewrite_stored_text([sid], None, ["José"], erase_jose)
        assert other.sessions.erasures(sid) == 1
        hidden = other.turns.hide_turn(sid)
        assert other.sessions.erasures(sid) == 2
        other.turns.show_turn(hidden)
        assert other.sessions.erasures(sid) == 3
    assert store.sessions.erasures(sid) == 3
    store.sessions.delete_session(engine.session.name)
    assert store.sessions.erasures(sid) is None


def test_a_purge_of_a_sessions_derived_memory_alone_counts_an_erasure(
        store: Store, history: History) -> None:
    # The name is in no message any more, only in what memory derived from them: a memory
    # update begun before the purge would otherwise write it back unnoticed.
    engine = kept_engine(store)
    engine.run_turn("We sailed to the islands in May.")
    sid = engine.session.id
    store.memory.set_strategy_state(sid, "summary", {"summary": "José lives in Porto."})
    with history.open() as other:
        done = other.redactions.rewrite_stored_text([sid], None, ["José"], erase_jose)
        assert done.sessions == {sid}
        assert other.sessions.erasures(sid) == 1
    assert store.memory.strategy_state(sid, "summary") == {
        "summary": "[erased] lives in Porto."}


def test_after_another_connections_purge_a_kept_engine_ranks_as_a_fresh_one(
        store: Store, history: History) -> None:
    engine = kept_engine(store)
    chat(engine)
    before = recall_rows(engine)  # recall's caches hold every vector now
    sid = engine.session.id
    with history.open() as other:
        other.redactions.rewrite_stored_text([sid], None, ["José"], erase_jose)
        # Another process embeds the session again (`chatmem index`), from the new text.
        Indexing(other, sid, background=False).finish(HashEmbedder())
    kept = recall_rows(engine)
    fresh = recall_rows(kept_engine(store, name="kept"))
    assert kept == fresh
    assert kept != before  # the purge changed the ranking: the test can tell stale from fresh
    sent = engine.build_context(QUESTION).messages()[:-1]  # the input names him itself
    assert not any("José" in m["content"] for m in sent)


def test_a_kept_engines_backlog_embeds_again_what_a_purge_left_without_vectors(
        store: Store, history: History) -> None:
    engine = kept_engine(store)
    chat(engine)
    sid, model = engine.session.id, HashEmbedder().key
    assert store.vectors.count_without_vectors(model, sid) == 0
    with history.open() as other:
        other.redactions.rewrite_stored_text([sid], None, ["José"], erase_jose)
        assert other.vectors.count_without_vectors(model, sid) == 2 * len(SAID)
    engine.run_turn("And the boat?")
    assert store.vectors.count_without_vectors(model, sid) == 0


def test_a_session_deleted_meanwhile_is_said_and_nothing_is_written(
        store: Store, history: History, make_engine: Callable[..., Engine[Store]]) -> None:
    engine = kept_engine(store)
    chat(engine)
    with history.open() as other:
        other.sessions.delete_session("kept")
    with pytest.raises(NotFound, match="'kept' was deleted meanwhile"):
        engine.run_turn("Are you still there?")
    with pytest.raises(NotFound, match="'kept' was deleted meanwhile"):
        engine.build_context(QUESTION)
    assert store.sessions.find_session("kept") is None
    assert store.db.execute("SELECT count(*) FROM messages").fetchone()[0] == 0


@pytest.mark.parametrize("cancelled", [False, True])
def test_a_turn_answered_across_a_purge_is_not_stored_and_the_purge_holds(
        store: Store, history: History, cancelled: bool) -> None:
    """The turn stored after the purge held the purged name in its context (the messages
    it was sent, as they were before the purge): inspect showed it again. A cancelled one is
    said as cancelled, not as the refusal (a Ctrl-C became "send it again")."""
    engine = kept_engine(store)
    chat(engine)
    sid = engine.session.id

    def purge() -> None:
        with history.open() as other:
            other.redactions.rewrite_stored_text([sid], None, ["José"], erase_jose)

    # As `facts forget --purge` in a second shell does while a chat's reply comes.
    engine.provider = ActsWhile("stream", purge)
    if cancelled:
        def interrupt(delta: str) -> None:
            raise KeyboardInterrupt
        result = engine.run_turn("Who cooks on Sundays? 谁在周日做饭？", on_delta=interrupt)
        assert (result.status, result.record.id) == (TurnStatus.CANCELLED, None)
    else:
        with pytest.raises(StoreError) as refused:
            engine.run_turn("Who cooks on Sundays? 谁在周日做饭？")
        assert refused.value.kind is StoreFailure.ERASED_MEANWHILE
    assert [t.number for t in store.turns.turns(sid)] == list(range(1, len(SAID) + 1))
    engine.provider = ScriptedProvider()
    again = engine.run_turn("Who cooks on Sundays? 谁在周日做饭？")
    assert "José" not in json.dumps(again.record.context, ensure_ascii=False)
    assert again.record.number == len(SAID) + 1


def test_a_turn_that_waited_for_a_purge_is_sent_after_it_and_stored(
        store: Store, history: History) -> None:
    """The turn read the erasure count before it waited for another process's purge (`facts
    forget --purge` in a second shell), built its context after the purge, and its commit
    then refused the paid reply: "text left this session's memory while the reply came …
    send it again"."""
    engine = kept_engine(store)
    chat(engine)
    sid = engine.session.id
    locked = threading.Event()

    def purge() -> None:
        with history.open() as other, other.write():
            other.redactions.rewrite_stored_text([sid], None, ["José"], erase_jose)
            locked.set()
            time.sleep(1.0)  # still writing when the turn checks it can store its reply

    thread = threading.Thread(target=purge)
    thread.start()
    assert locked.wait(10)
    try:
        result = engine.run_turn("Who cooks on Sundays? 谁在周日做饭？")
    finally:
        thread.join()
    assert result.record.number == len(SAID) + 1
    assert [t.number for t in store.turns.turns(sid)] == list(range(1, len(SAID) + 2))
    assert "José" not in json.dumps(result.record.context, ensure_ascii=False)


def deleting(other: Callable[[], Store], name: str) -> Callable[[], None]:
    """Session `name` deleted by another connection (`other`), as `sessions delete` in a
    second shell does."""
    def delete() -> None:
        with other() as connection:
            connection.sessions.delete_session(name)
    return delete


def said_deleted(run: Callable[[], object], name: str, outcome: str) -> None:
    """`run` fails as a turn whose session was deleted meanwhile: one line, exit 1."""
    with pytest.raises(NotFound) as gone:
        run()
    assert str(gone.value) == (f"session {name!r} was deleted meanwhile (or is no longer"
                               f" shared with you): {outcome}")
    assert gone.value.exit_code is ExitCode.ERROR


def delete_while_replying(store: Store, other: Callable[[], Store], cancelled: bool) -> None:
    """Another connection (`other`) deletes the session while a turn's reply comes: the
    turn says so in the words a deletion before the turn gets, and stores nothing (the
    database's own refusal named a foreign key on SQLite, row security on PostgreSQL)."""
    engine = kept_engine(store)
    engine.run_turn("我住在杭州")

    engine.provider = ActsWhile("stream", deleting(other, "kept"))
    if cancelled:
        def interrupt(delta: str) -> None:
            raise KeyboardInterrupt
        result = engine.run_turn("我住在哪里？", on_delta=interrupt)
        assert (result.status, result.record.id) == (TurnStatus.CANCELLED, None)
    else:
        said_deleted(lambda: engine.run_turn("我住在哪里？"), "kept", "the turn was not stored")
    assert store.sessions.find_session("kept") is None
    for table in ("messages", "turns"):
        assert store.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
    with pytest.raises(NotFound, match=r"'kept' was deleted meanwhile .*: nothing was sent"):
        engine.run_turn("还在吗？")


@pytest.mark.parametrize("cancelled", [False, True])
def test_a_session_deleted_while_the_reply_comes_is_said_and_nothing_is_stored(
        store: Store, history: History, cancelled: bool) -> None:
    delete_while_replying(store, history.open, cancelled)


def test_a_session_deleted_while_the_reply_comes_is_said_alike_under_row_security(
        pg_server: PostgresServer, pg_template: str) -> None:
    """As a role that is not superuser (ann), whose insert row security refused."""
    database = pg_server.create_database(pg_template)
    ann = pg_server.url(database, "ann")
    try:
        with Store(ann) as store:
            delete_while_replying(store, lambda: Store(ann), cancelled=False)
    finally:
        pg_server.drop_database(database)


@pytest.mark.parametrize("strategy", ["summary", "entity", "summary+entity"])
def test_a_session_deleted_while_its_memory_updates_is_said_not_retried(
        store: Store, history: History, strategy: str) -> None:
    """It said "memory update failed, will retry next turn: database error: FOREIGN KEY
    constraint failed" (row security's words on PostgreSQL), then "no session with id 9"."""
    settings = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="none"))

    engine = open_session(store, settings, ScriptedProvider(), "s6", strategy=strategy,
                          helper=ActsWhile("complete", deleting(history.open, "s6")))
    said_deleted(lambda: engine.run_turn("My city is Oslo. 我住在奥斯陆。"), "s6",
                 "the turn was deleted with it")
    assert store.sessions.find_session("s6") is None
    for table in ("summaries", "strategy_state", "facts"):
        assert store.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0


class Recording(ScriptedProvider):
    """The scripted model, keeping each chat request's messages as it was sent them."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def stream(self, messages: Any) -> Any:
        self.sent.append(json.dumps(list(messages), ensure_ascii=False))
        return super().stream(messages)


def test_a_purge_while_a_turn_catches_up_is_not_sent_from_recalls_kept_candidates(
        store: Store, history: History) -> None:
    """Recall keeps the candidate rows (and the messages made of them) it read between
    builds, emptied when a turn follows the erasures, before its catch-up (a strategy
    switched to, its helper model reading every turn): a purge in another shell meanwhile
    had the turn send the purged name from the rows kept (recall by words; only an
    embedder indexing inline had the catch-up follow them, to drop its stale vectors)."""
    settings = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="none"))
    engine = open_session(store, settings, ScriptedProvider(), "kept", strategy="retrieval",
                          params={"recent": "1", "max_tokens": "400"})
    assert engine.embedder is None
    chat(engine)
    sid = engine.session.id
    question = "What does my friend cook on Sundays? 我朋友周日做什么菜？"
    recalled = engine.build_context(question).part("recalled")
    assert recalled is not None and any("José" in m.content for m in recalled.messages)

    def purge() -> None:
        with history.open() as other:
            other.redactions.rewrite_stored_text([sid], None, ["José"], erase_jose)

    engine.set_strategy(create_strategy("entity+retrieval", {
        "retrieval.recent": "1", "retrieval.max_tokens": "400"}))
    engine.helper = ActsWhile("complete", purge, purpose=Purpose.FACTS)
    engine.provider = model = Recording()
    result = engine.run_turn(question)  # built after the purge: stored
    assert result.status is TurnStatus.OK and result.record.number == len(SAID) + 1
    assert engine.helper.armed is None  # the purge ran, inside the catch-up's extraction
    assert len(model.sent) == 1 and "José" not in model.sent[0]
    assert "My friend [erased] lives in Porto" in model.sent[0]  # recalled, as it is now
