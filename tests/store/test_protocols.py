"""Store implements every repository Protocol that history and memory are typed with."""

from __future__ import annotations

from pathlib import Path

from chatmem.store import Store
from chatmem.store.protocols import (
    FactRepository,
    HistoryRepository,
    MemoryStateRepository,
    VectorRepository,
)


def test_store_is_every_repository(tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        # mypy checks these assignments (a missing or changed method fails `mypy tests`);
        # at run time, each Protocol's methods are the store's.
        history: HistoryRepository = store
        state: MemoryStateRepository = store
        facts: FactRepository = store
        vectors: VectorRepository = store
        session = store.create_session("s", "window")
        assert history.turn_count(session.id) == 0
        assert state.strategy_state(session.id, "window") == {}
        assert facts.session_names([session.id]) == {session.id: "s"}
        assert vectors.count_without_vectors("hash:8", session.id) == 0
