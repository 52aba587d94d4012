"""The composition root: what a Workspace opens, it opens once and closes once; a reading
workspace never creates a history; an engine is built with everything in its constructor."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from chat_server import ChatServer
from conftest import History

from chatmem.app import Workspace
from chatmem.app.conversations import open_conversation, start_conversation
from chatmem.app.model_pool import ModelPool
from chatmem.config.settings import Settings
from chatmem.errors import ExitCode, NotFound, WrongThread
from chatmem.plugin_entries import Plugins
from chatmem.plugins import ENTRY_POINT_GROUP, Registries
from chatmem.providers.base import Provider
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import open_files


class Counted(ScriptedProvider):
    closed = 0

    def close(self) -> None:
        Counted.closed += 1


OPENED: list[str | None] = []


def register(plugins: Plugins) -> None:
    """A plugin's provider `counted`, which notes each model it opens."""

    def create(settings: Settings) -> Counted:
        OPENED.append(settings.model)
        return Counted(settings.model or "scripted")

    plugins.add_provider("counted", create)


def counting_registries() -> Registries:
    OPENED.clear()
    Counted.closed = 0
    point = EntryPoint("counted", f"{__name__}:register", ENTRY_POINT_GROUP)
    return Registries(entry_points=lambda: [point])


def test_models_are_opened_once_per_choice_and_closed_once(tmp_path: Path) -> None:
    registries = counting_registries()
    settings = Settings(provider="counted", db=str(tmp_path / "h.db"), model="chat",
                        helper_provider="counted", helper_model="cheap")
    with Workspace(settings, registries=registries) as ws:
        chat = ws.chat_provider
        assert ws.chat_provider is chat
        helper = ws.helper_for(settings, chat)
        assert helper is not None and helper is ws.helper_for(settings, chat)
        assert OPENED == ["chat", "cheap"]
        assert Counted.closed == 0
    assert Counted.closed == 2  # each once, when the workspace closed


def test_a_pool_shares_models_between_workspaces_and_its_owner_closes_them(
        tmp_path: Path) -> None:
    registries = counting_registries()
    pool = ModelPool()
    settings = Settings(provider="counted", db=str(tmp_path / "h.db"))
    with Workspace(settings, models=pool, registries=registries) as one, \
            Workspace(settings, models=pool, registries=registries) as two:
        assert one.chat_provider is two.chat_provider
    assert OPENED == [None] and Counted.closed == 0  # the pool's, not the workspaces'
    pool.close()
    assert Counted.closed == 1


def test_a_pools_chat_model_is_opened_once_whatever_options_each_request_brings(
        tmp_path: Path, chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server's workspaces share a pool: a model was opened (and kept for the server's
    life) for each set of options a request brought, and a client sending a seed of its own
    each time grew the server by ~0.8 MB a request. Each reply is still asked with its own."""
    from chatmem.config.settings import Source, SourceKind, with_options
    from chatmem.plugins import load_registries

    registries = load_registries()
    opened: list[dict[str, object]] = []
    create = registries.create_provider

    def counted(settings: Settings) -> Provider:
        opened.append(dict(settings.options))
        return create(settings)

    monkeypatch.setattr(registries, "create_provider", counted)
    pool = ModelPool()
    settings = Settings(provider="openai", base_url=chat_server.base_url, model="test-small",
                        db=str(tmp_path / "历史.db"))
    asked = [{"seed": 1}, {"seed": 2, "temperature": 0.5}, {"seed": 3, "max_reply_tokens": 9}]
    try:
        for options in asked:
            with Workspace(with_options(settings, options, Source(SourceKind.FLAG, "request")),
                           models=pool, registries=registries) as ws:
                assert "".join(ws.chat_provider.stream(
                    [{"role": "user", "content": "你好"}])) == "Hello from the test server."
    finally:
        pool.close()
    assert opened == [{}]
    sent = chat_server.requests
    assert [(r.get("seed"), r.get("temperature"), r["max_tokens"]) for r in sent] == [
        (1, None, 4096), (2, 0.5, 4096), (3, None, 9)]


def test_a_reading_workspace_creates_no_file(tmp_path: Path) -> None:
    named = tmp_path / "nosuch.db"
    with Workspace(Settings(db=str(named)), create=False) as ws, pytest.raises(NotFound):
        _ = ws.store
    assert not named.exists()
    with Workspace(Settings(), create=False) as ws:  # the default file: an empty history
        assert ws.store.sessions.list_sessions() == []
        assert not ws.has_history


def test_a_one_off_workspace_touches_no_file(tmp_path: Path) -> None:
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"))
    with Workspace(settings, one_off=True) as ws, open_conversation(ws, "one-off") as engine:
        engine.run_turn("hello")
        assert not engine.keeps_memory
    assert not (tmp_path / "h.db").exists()


def test_an_engine_is_given_what_opening_changed(tmp_path: Path) -> None:
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"))
    with Workspace(settings) as ws:
        parse = ws.registries.strategies.parse
        first = start_conversation(ws, "s", strategy=parse("window"))
        assert first.created and first.notices == []
        first.run_turn("hi")
        first.finish()
        again = start_conversation(ws, "s", strategy=parse("buffer"), system="Be terse.",
                                   budget=123)
        assert not again.created
        assert again.budget == 123
        assert again.pending == {"strategy": "buffer", "params": {}, "system": "Be terse."}
        assert [type(n).__name__ for n in again.notices] == ["StrategyChanged",
                                                            "SystemPromptReplaced"]
        again.finish()
        assert ws.store.sessions.session("s").strategy == "buffer"  # kept when the command ended


def test_a_pool_runs_retention_once_on_each_history_its_workspaces_open(
        tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from chatmem.app.conversations import apply_retention
    from chatmem.store import Store

    then = datetime.now(UTC) - timedelta(days=45)
    histories = [tmp_path / "ann.db", tmp_path / "bob.db"]
    for db in histories:
        with Store(db, clock=lambda: then) as store:
            old = store.sessions.create_session("old", "window")
            store.history.import_messages(old.id, [{"role": "user", "content": "hi"}])
    pool = ModelPool()
    # A server's tokens may name several histories: each is pruned once, at its first use.
    for db, done_before in ((histories[0], False), (histories[1], False),
                            (histories[0], True)):
        with Workspace(Settings(provider="scripted", db=str(db), retention_days=30),
                       models=pool) as ws:
            assert ws.retention_checked is done_before
            apply_retention(ws)
            assert ws.retention_checked and ws.store.sessions.find_session("old") is None


def test_a_pool_keeps_one_embedder_per_key_in_the_embedders_url(tmp_path: Path) -> None:
    # The section's repr masks the key: two keys for one server are two embedders.
    from dataclasses import replace

    from chatmem.config.sections import EmbeddingsSection

    pool = ModelPool()
    opened = []
    for key in ("sk-one1111", "sk-two2222", "sk-one1111"):
        section = EmbeddingsSection(provider="hash", base_url=f"http://k:{key}@127.0.0.1:9/v1")
        settings = replace(Settings(provider="scripted", db=str(tmp_path / "h.db")),
                           embeddings=section)
        with Workspace(settings, models=pool) as ws:
            opened.append(ws.embedder)
    assert opened[0] is not opened[1] and opened[0] is opened[2]
    pool.close()


def on_another_thread(work: Callable[[], object]) -> BaseException | None:
    """What `work` raised on a thread of its own (None: nothing)."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as e:
            raised.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return raised[0] if raised else None


def test_a_workspace_used_on_another_thread_says_so_and_stores_nothing(
        history: History) -> None:
    # A program that hands its engine to a worker (asyncio.to_thread, a thread pool) is
    # told the rule, not SQLite's words; PostgreSQL's connection would interleave the
    # threads' transactions ("commit at the wrong nesting level") and store nothing.
    settings = Settings(provider="scripted", db=str(history.location))
    with Workspace(settings) as ws, open_conversation(ws, "bot") as engine:
        engine.run_turn("hello")
        for work in (lambda: engine.run_turn("from a worker"),
                     lambda: ws.store.sessions.list_sessions()):
            error = on_another_thread(work)
            assert isinstance(error, WrongThread), repr(error)
            assert error.exit_code == ExitCode.USAGE and error.location == ws.location
            assert "thread" in str(error) and "Workspace" in str(error)
        engine.run_turn("back on its thread")
        assert [t.input for t in ws.store.turns.turns(engine.session.id)] == [
            "hello", "back on its thread"]


def test_a_workspace_closes_from_another_thread_than_its_history_opened_on(
        history: History) -> None:
    settings = Settings(provider="scripted", db=str(history.location))
    ws = Workspace(settings)
    assert on_another_thread(lambda: ws.store.sessions.create_session("s", "window")) is None
    ws.close()  # once raised sqlite3's ProgrammingError, and kept the file counted open
    if history.is_file:
        path = Path(history.location)
        assert open_files.held_kind(path) is None
        assert not [fd for fd in Path("/proc/self/fd").iterdir()
                    if os.path.realpath(fd) == str(path.resolve())]
    with Workspace(settings) as again:  # as it was left
        assert [s.name for s in again.store.sessions.list_sessions()] == ["s"]


def test_open_history_opens_it_when_asked_not_at_first_use(tmp_path: Path) -> None:
    # The CLI asks an encrypted file's key before its spinner starts, serve before its
    # openings wait on each other: each opened the history by reading `ws.store`.
    named = tmp_path / "h.db"
    with Workspace(Settings(db=str(named))) as ws:
        assert not named.exists()
        ws.open_history()
        assert named.exists() and ws.store.sessions.list_sessions() == []
    with Workspace(Settings(db=str(tmp_path / "nosuch.db")), create=False) as ws, \
            pytest.raises(NotFound):
        ws.open_history()
