"""Settings made in code that cannot work (a timezone no zone has) are refused before
anything is stored: no history file, no session row, whether the conversation is opened by
the use case (open_conversation) or by the engine's open_session."""

from __future__ import annotations

from pathlib import Path

import pytest
from registered import open_session

from chatmem.app import Workspace
from chatmem.app.conversations import open_conversation
from chatmem.config.settings import Settings
from chatmem.errors import ConfigError
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store


def test_a_timezone_no_zone_has_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    bad = Settings(provider="scripted", db=str(path), timezone="Mars/Base")
    with Workspace(bad) as ws, pytest.raises(ConfigError, match="Mars/Base"), \
            open_conversation(ws, "火星"):
        pass
    assert not path.exists()
    with Workspace(Settings(provider="scripted", db=str(path))) as ws, \
            open_conversation(ws, "earth") as engine:
        engine.run_turn("hello")
    with Workspace(bad) as ws, pytest.raises(ConfigError, match="Mars/Base"), \
            open_conversation(ws, "火星"):
        pass
    with Store(path) as store:
        with pytest.raises(ConfigError, match="Mars/Base"):
            open_session(store, bad, ScriptedProvider(), "mars", strategy="window")
        assert [s.name for s in store.sessions.list_sessions()] == ["earth"]
