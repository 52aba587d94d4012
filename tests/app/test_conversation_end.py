"""chatmem used as a library: a conversation opened (open_conversation, start_conversation),
its turns run, then finished or its workspace closed, leaves no embedding thread running
and stores what the backlog embedded, as `chatmem chat` does when it ends."""

from __future__ import annotations

import sqlite3
import threading
from importlib.metadata import EntryPoint
from pathlib import Path

from gated_embedder import GatedEmbedder

from chatmem.app import Workspace
from chatmem.app.conversations import open_conversation, start_conversation
from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.plugin_entries import Plugins
from chatmem.plugins import ENTRY_POINT_GROUP, Registries

GATE: list[GatedEmbedder] = []


def register(plugins: Plugins) -> None:
    """A plugin's embedder `gated`: the test's GatedEmbedder."""
    plugins.add_embedder("gated", lambda settings: GATE[-1])


def gated(tmp_path: Path) -> tuple[Settings, Registries, GatedEmbedder]:
    GATE.append(GatedEmbedder())
    point = EntryPoint("gated", f"{__name__}:register", ENTRY_POINT_GROUP)
    settings = Settings(provider="scripted", db=str(tmp_path / "h.db"), strategy="retrieval",
                        embeddings=EmbeddingsSection(provider="gated"))
    return settings, Registries(entry_points=lambda: [point]), GATE[-1]


def backlog_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("chatmem-embed-")]


def vectors(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM message_vectors").fetchone()[0])


def test_a_finished_conversation_stores_what_its_backlog_embedded(tmp_path: Path) -> None:
    settings, registries, gate = gated(tmp_path)
    gate.allow(1)
    with Workspace(settings, registries=registries) as ws, \
            open_conversation(ws, "bot") as engine:
        engine.run_turn("my dog Max likes the park 我的狗喜欢公园")
        gate.wait_finished(1)  # both messages embedded, not stored yet
        before = backlog_threads()
    assert vectors(tmp_path / "h.db") == 2
    assert not [t for t in before if t.is_alive()]


def test_closing_the_workspace_stops_an_unfinished_engines_backlog(tmp_path: Path) -> None:
    settings, registries, gate = gated(tmp_path)
    with Workspace(settings, registries=registries) as ws:
        engine = start_conversation(ws, "bot")
        for n in range(5):  # the thread waits in its first batch; the rest queue behind it
            engine.run_turn(f"turn {n}: 我们去杭州")
        threads = backlog_threads()
        assert threads
        gate.allow(1)  # the batch at hand ends; no other is begun
    assert not [t for t in threads if t.is_alive()]
