"""An engine kept open (a server's) follows what another process changes in its session,
except what whoever opened it chose."""

from __future__ import annotations

from pathlib import Path

from registered import open_session

from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store


def test_a_strategy_opened_as_a_default_follows_a_change_made_elsewhere(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with Store(db) as store, Store(db) as elsewhere:
        engine = open_session(store, Settings(), ScriptedProvider(), "服务器会话",
                              strategy="window:k=2")
        engine.finish()
        session = elsewhere.sessions.session("服务器会话")
        elsewhere.sessions.update_session(session.id, strategy="buffer", params={})
        # Chosen by whoever opened it (a request naming a strategy): kept.
        assert not engine.changed_elsewhere()
        engine.follow_strategy_changes()  # it was only the server's default
        assert engine.changed_elsewhere()
