"""How often a turn reads its session's erasures count: before it is sent (the purge check),
under the commit's write lock, and after it only where a backlog may hold stale vectors."""

from __future__ import annotations

from pathlib import Path

import pytest
from meter import traced
from registered import open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.memory.indexing import Indexing
from chatmem.plugins import load_registries
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store


@pytest.mark.parametrize("background", [False, True])
def test_a_turn_reads_the_erasures_again_after_its_commit_only_for_a_background_backlog(
        tmp_path: Path, background: bool) -> None:
    with Store(tmp_path / "h.db") as store:
        settings = Settings(embeddings=EmbeddingsSection(provider="hash"))
        engine = open_session(store, settings, ScriptedProvider(), "s", strategy="retrieval",
                              embedder=load_registries().create_embedder("hash", settings))
        engine.indexing = Indexing(store, engine.session.id, background=background)
        for text in ("我们五月去杭州旅行，预算五千元。", "My order is ORD-7731."):
            engine.run_turn(text)
        try:
            with traced(store) as seen:
                engine.run_turn("where are we going in May?")
        finally:
            engine.indexing.close()
        # Before sending; after the commit only where the backlog ran beside the reply.
        assert sum(sql.startswith("SELECT erasures FROM sessions") for sql in seen) == (
            2 if background else 1)
        assert [m.content for m in store.history.messages(engine.session.id)][-2:] == [
            "where are we going in May?", "echo #3: where are we going in May?"]
