"""Conversations a server keeps open between requests (chatmem.app.kept), over a real
history file: one thread and one engine per conversation, opened once, its jobs one at a
time; others run beside it; the least recently used is closed past the limit; a failure or
a session deleted by another connection opens it anew."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from waiting import HANG, wait_until

from chatmem.app import Workspace
from chatmem.app.conversations import start_conversation
from chatmem.app.kept import KeptConversations
from chatmem.app.model_pool import ModelPool
from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.store import Store


@pytest.fixture
def settings(db_path: Path) -> Settings:
    return Settings(provider="scripted", db=str(db_path))


class Opener:
    """Opens a conversation's workspace and engine as the proxy does, counting each."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.pool = ModelPool()
        self.opened: Counter[str] = Counter()
        self.closed: list[Workspace] = []

    def workspace(self) -> Workspace:
        ws = Workspace(self.settings, models=self.pool)
        ws.owns(lambda: self.closed.append(ws))
        return ws

    def run(self, kept: KeptConversations, name: str, job: Any) -> Any:
        """`job` on conversation `name` as the proxy runs one (the key is the name)."""
        def open_engine(ws: Workspace) -> Engine[Store]:
            self.opened[name] += 1
            return start_conversation(ws, name)
        return kept.run(name, self.workspace, open_engine, job)


def turn(text: str):  # type: ignore[no-untyped-def]
    def job(ws: Workspace, engine: Engine[Store]) -> tuple[int, int]:
        result = engine.run_turn(text)
        return result.record.number, threading.get_ident()
    return job


def test_a_conversations_jobs_share_one_engine_on_one_thread(settings: Settings) -> None:
    opener, kept = Opener(settings), KeptConversations()
    try:
        done = [opener.run(kept, "a", turn(f"turn {n}: 我们去杭州")) for n in range(3)]
    finally:
        kept.close()
    assert [number for number, _ in done] == [1, 2, 3]
    assert len({thread for _, thread in done}) == 1
    assert threading.get_ident() not in {thread for _, thread in done}
    assert opener.opened == {"a": 1}
    assert len(opener.closed) == 1  # closed once, when the server stops


class SlowJob:
    """A job of conversation "a", run through `kept` on a thread of this test's, that holds
    its conversation's thread until `finish`."""

    def __init__(self, opener: Opener, kept: KeptConversations) -> None:
        self.release, self.waiting = threading.Event(), threading.Event()
        self.results: list[str] = []
        self.runner = threading.Thread(
            target=lambda: self.results.append(opener.run(kept, "a", self.job)))
        self.runner.start()

    def job(self, ws: Workspace, engine: Engine[Store]) -> str:
        self.waiting.set()
        assert self.release.wait(HANG)
        return "slow done"

    def finish(self) -> None:
        self.release.set()
        self.runner.join(HANG)


def test_another_conversation_runs_while_one_waits(settings: Settings) -> None:
    opener, kept = Opener(settings), KeptConversations()
    slow = SlowJob(opener, kept)
    try:
        assert slow.waiting.wait(HANG)
        # "a" holds its thread; "b" has a thread of its own and is not held up.
        assert opener.run(kept, "b", turn("hello"))[0] == 1
        assert slow.results == []
    finally:
        slow.finish()
        kept.close()
    assert slow.results == ["slow done"]


def test_past_the_limit_the_least_recently_used_is_closed_and_opened_again_later(
        settings: Settings) -> None:
    opener, kept = Opener(settings), KeptConversations(size=2)
    try:
        for name in ["a", "b", "a", "c"]:  # "b" is the least recently used when "c" opens
            opener.run(kept, name, turn(f"to {name}"))
        assert len(kept) == 2
        assert opener.run(kept, "a", turn("again"))[0] == 3
        assert opener.run(kept, "b", turn("again"))[0] == 2  # its turns were kept
    finally:
        kept.close()
    assert opener.opened == {"a": 1, "b": 2, "c": 1}
    # An evicted conversation closes on its own thread, without holding up the request
    # that evicted it: "c" (evicted by the last "b") may still be closing.
    wait_until(lambda: len(opener.closed) == 4, "every conversation opened is closed")
    assert len(opener.closed) == 4


def test_a_failed_job_closes_the_conversation_and_the_next_opens_it_anew(
        settings: Settings) -> None:
    opener, kept = Opener(settings), KeptConversations()

    def broken(ws: Workspace, engine: Engine[Store]) -> None:
        raise RuntimeError("the job broke")

    try:
        opener.run(kept, "a", turn("first"))
        with pytest.raises(RuntimeError, match="the job broke"):
            opener.run(kept, "a", broken)
        assert len(opener.closed) == 1
        assert opener.run(kept, "a", turn("second"))[0] == 2
    finally:
        kept.close()
    assert opener.opened == {"a": 2}


def test_a_session_deleted_by_another_connection_is_opened_anew(
        settings: Settings, db_path: Path) -> None:
    opener, kept = Opener(settings), KeptConversations()
    try:
        opener.run(kept, "a", turn("first"))
        with Store(db_path) as other:
            other.sessions.delete_session("a")
        # A new session of that name, as a request that opened it afresh would start.
        assert opener.run(kept, "a", turn("after the delete"))[0] == 1
    finally:
        kept.close()
    assert opener.opened == {"a": 2}
    with Store(db_path) as store:
        session = store.sessions.session("a")
        first = store.history.messages(session.id)[0]
        assert first.content == "after the delete"


def test_a_session_renamed_or_reconfigured_by_another_connection_is_opened_anew(
        settings: Settings, db_path: Path) -> None:
    """A server kept writing conversation 改名 into the session renamed 旧名, and kept the
    strategy and system prompt another front end had changed (/strategy, /system) for as
    long as it ran."""
    opener, kept = Opener(settings), KeptConversations()

    def configured(ws: Workspace, engine: Engine[Store]) -> tuple[str, str, str | None]:
        return engine.strategy.name, engine.session.name, engine.session.system

    try:
        opener.run(kept, "改名", turn("第一句"))
        with Store(db_path) as other:
            other.sessions.rename_session("改名", "旧名")
        assert opener.run(kept, "改名", turn("改名以后"))[0] == 1  # a session of that name
        with Store(db_path) as other:
            session = other.sessions.session("改名")
            other.sessions.update_session(session.id, strategy="summary-buffer",
                                          params={}, system="你是一个导游。")
        assert opener.run(kept, "改名", configured) == ("summary-buffer", "改名", "你是一个导游。")
        assert opener.run(kept, "改名", configured) == ("summary-buffer", "改名", "你是一个导游。")
    finally:
        kept.close()
    assert opener.opened == {"改名": 3}
    with Store(db_path) as store:
        said = {name: [m.content for m in store.history.messages(
            store.sessions.session(name).id) if m.role == "user"] for name in ("旧名", "改名")}
    assert said == {"旧名": ["第一句"], "改名": ["改名以后"]}


def test_two_kept_engines_that_chose_different_strategies_do_not_reopen_each_other(
        settings: Settings) -> None:
    """serve's `model@window` and `model@buffer` for one conversation: each engine's write of
    its strategy looked like another process's change to the other, so every request opened
    its engine anew."""
    from registered import parse_spec

    opener, kept = Opener(settings), KeptConversations()

    def run(strategy: str, text: str) -> Any:
        def open_engine(ws: Workspace) -> Engine[Store]:
            opener.opened[strategy] += 1
            return start_conversation(ws, "同一个", strategy=parse_spec(strategy))
        return kept.run(("同一个", strategy), opener.workspace, open_engine, turn(text))

    try:
        for i in range(3):
            run("window", f"窗口 {i}")
            run("buffer", f"缓冲 {i}")
    finally:
        kept.close()
    assert opener.opened == {"window": 1, "buffer": 1}


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_history_file_deleted_or_replaced_is_opened_anew_not_written_unseen(
        settings: Settings, db_path: Path, how: str) -> None:
    """A kept conversation's connection still holds the file it opened: a turn stored there
    after the file left its path would be reported stored and lost."""
    opener, kept = Opener(settings), KeptConversations()
    try:
        opener.run(kept, "删除", turn("第一条"))
        for leftover in db_path.parent.glob(db_path.name + "*"):
            leftover.unlink()
        if how == "replaced":
            with Store(db_path) as other:
                other.sessions.create_session("别的", "window")
        assert opener.run(kept, "删除", turn("第二条"))[0] == 1
    finally:
        kept.close()
    assert opener.opened == {"删除": 2}
    with Store(db_path) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("删除").id)]
    assert said[0] == "第二条"


def test_a_backup_restored_under_a_kept_conversation_stays_as_restored(
        settings: Settings, db_path: Path) -> None:
    """The kept connection sees the restore and lets the file go: the turn only the replaced
    file held (still in its write-ahead log beside the path) does not come back."""
    import shutil
    import sqlite3

    opener, kept = Opener(settings), KeptConversations()
    backup = db_path.with_name("backup.db")
    try:
        opener.run(kept, "恢复", turn("备份里有"))
        source, copy = sqlite3.connect(db_path), sqlite3.connect(backup)
        source.backup(copy)
        source.close()
        copy.close()
        opener.run(kept, "恢复", turn("备份里没有"))
        shutil.copy(backup, db_path.with_name("incoming"))
        db_path.with_name("incoming").replace(db_path)
        assert opener.run(kept, "恢复", turn("恢复以后"))[0] == 2
    finally:
        kept.close()
    with Store(db_path) as store:
        said = [m.content for m in store.history.messages(store.sessions.session("恢复").id)
                if m.role == "user"]
    assert said == ["备份里有", "恢复以后"]


def test_closing_after_another_connections_purge_stores_no_vector_of_the_erased_text(
        settings: Settings, db_path: Path) -> None:
    import dataclasses

    from chatmem.config.sections import EmbeddingsSection
    from chatmem.embeddings.hashed import HashEmbedder

    settings = dataclasses.replace(settings, strategy="retrieval",
                                   embeddings=EmbeddingsSection(provider="hash"))
    opener, kept = Opener(settings), KeptConversations()
    try:
        for text in ["José lives in Porto.", "José 住在波尔图。"]:
            # After each turn the backlog embeds its messages on a thread of its own; they
            # are stored at the next turn, or when the conversation closes.
            opener.run(kept, "a", turn(text))
        with Store(db_path) as other:
            sid = other.sessions.session("a").id
            other.redactions.rewrite_stored_text([sid], None, ["José"],
                                                 lambda t: t.replace("José", "[erased]"))
    finally:
        kept.close()
    with Store(db_path) as store:
        # The purge dropped the session's vectors; what the backlog had computed from the
        # text before it is not stored at close.
        assert store.vectors.count_without_vectors(HashEmbedder().key, sid) == 4


def test_a_conversation_that_cannot_open_keeps_no_place(settings: Settings) -> None:
    from chatmem.errors import UsageError

    opener, kept = Opener(settings), KeptConversations(size=2)
    try:
        opener.run(kept, "a", turn("first"))
        for _ in range(3):
            with pytest.raises(UsageError):
                opener.run(kept, "bad name\x00", turn("never sent"))
        assert len(kept) == 1
        assert opener.run(kept, "a", turn("second"))[0] == 2
    finally:
        kept.close()
    assert opener.opened["a"] == 1  # never pushed out by the names that failed


def test_closing_waits_for_the_job_of_a_conversation_evicted_while_it_ran(
        settings: Settings) -> None:
    """A server stopping waits for what its conversations still run (a memory update): one
    evicted meanwhile was forgotten, and the server exited in the middle of its job."""
    opener, kept = Opener(settings), KeptConversations(size=1)
    slow = SlowJob(opener, kept)
    closer = threading.Thread(target=kept.close)
    try:
        assert slow.waiting.wait(HANG)
        assert opener.run(kept, "b", turn("hello"))[0] == 1  # "a" evicted, its job running
        closer.start()
        closer.join(0.5)
        assert closer.is_alive()  # still waiting for "a"'s job
    finally:
        slow.finish()
        if closer.ident is None:
            closer.start()
        closer.join(HANG)
    assert slow.results == ["slow done"]
    assert len(opener.closed) == 2  # "a" closed too, before close returned
