"""chatmem used as a library: a conversation opened (open_conversation, start_conversation),
its turns run, then finished or its workspace closed, leaves no embedding thread running
and stores what the backlog embedded, as `chatmem chat` does when it ends."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from importlib.metadata import EntryPoint
from pathlib import Path

from chatmem.app import Workspace
from chatmem.app.conversations import open_conversation, start_conversation
from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.plugin_entries import Plugins
from chatmem.plugins import ENTRY_POINT_GROUP, Registries

WAIT = 5.0
"""Seconds a gated call waits for the test before it fails (only against a hang)."""


class Gated(HashEmbedder):
    """The hash embedder, whose stored-text calls wait until the test lets one through."""

    def __init__(self) -> None:
        super().__init__()
        self.allowed = 0
        self.finished = 0
        self._cond = threading.Condition()

    def allow(self, calls: int) -> None:
        with self._cond:
            self.allowed += calls
            self._cond.notify_all()

    def embed(self, texts: Sequence[str], *, query: bool = False):  # type: ignore[no-untyped-def]
        if not query:
            with self._cond:
                if not self._cond.wait_for(lambda: self.allowed > 0, timeout=WAIT):
                    raise TimeoutError("the test never let this batch through")
                self.allowed -= 1
        rows = super().embed(texts, query=query)
        if not query:
            with self._cond:
                self.finished += 1
                self._cond.notify_all()
        return rows

    def wait_finished(self, calls: int) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: self.finished >= calls, timeout=WAIT)


GATE: list[Gated] = []


def register(plugins: Plugins) -> None:
    """A plugin's embedder `gated`: the test's Gated."""
    plugins.add_embedder("gated", lambda settings: GATE[-1])


def gated(tmp_path: Path) -> tuple[Settings, Registries, Gated]:
    GATE.append(Gated())
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
