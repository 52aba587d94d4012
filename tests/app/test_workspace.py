"""The composition root: what a Workspace opens, it opens once and closes once; a reading
workspace never creates a history; an engine is built with everything in its constructor."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatmem.app import Workspace
from chatmem.app.conversations import open_conversation, start_conversation
from chatmem.app.workspace import ModelPool
from chatmem.config.settings import Settings
from chatmem.errors import NotFound
from chatmem.providers.scripted import ScriptedProvider


class Counted(ScriptedProvider):
    closed = 0

    def close(self) -> None:
        Counted.closed += 1


def test_models_are_opened_once_per_choice_and_closed_once(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    opened: list[str | None] = []

    def create(settings: Settings) -> ScriptedProvider:
        opened.append(settings.model)
        return Counted(settings.model or "scripted")

    monkeypatch.setattr("chatmem.providers.create_provider", create)
    Counted.closed = 0
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"), model="chat",
                        helper_model="cheap")
    with Workspace(settings) as ws:
        chat = ws.chat_provider
        assert ws.chat_provider is chat
        helper = ws.helper_for(settings, chat)
        assert helper is not None and helper is ws.helper_for(settings, chat)
        assert opened == ["chat", "cheap"]
        assert Counted.closed == 0
    assert Counted.closed == 2  # each once, when the workspace closed


def test_a_pool_shares_models_between_workspaces_and_its_owner_closes_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chatmem.providers.create_provider",
                        lambda settings: Counted(settings.model or "scripted"))
    Counted.closed = 0
    pool = ModelPool()
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"))
    with Workspace(settings, models=pool) as one, Workspace(settings, models=pool) as two:
        assert one.chat_provider is two.chat_provider
    assert Counted.closed == 0  # the pool's, not the workspaces'
    pool.close()
    assert Counted.closed == 1


def test_a_reading_workspace_creates_no_file(tmp_path: Path) -> None:
    named = tmp_path / "nosuch.db"
    with Workspace(Settings(db=str(named)), create=False) as ws, pytest.raises(NotFound):
        _ = ws.store
    assert not named.exists()
    with Workspace(Settings(), create=False) as ws:  # the default file: an empty history
        assert ws.store.list_sessions() == []
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
        first = start_conversation(ws, "s", strategy="window")
        assert first.created and first.notices == []
        first.run_turn("hi")
        first.finish()
        again = start_conversation(ws, "s", strategy="buffer", system="Be terse.",
                                   budget=123)
        assert not again.created
        assert again.budget == 123
        assert again.pending == {"strategy": "buffer", "params": {}, "system": "Be terse."}
        assert [type(n).__name__ for n in again.notices] == ["StrategyChanged",
                                                            "SystemPromptReplaced"]
        again.finish()
        assert ws.store.session("s").strategy == "buffer"  # kept when the command ended
