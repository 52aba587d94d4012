"""Store implements every repository Protocol that history, memory, the engine and
evaluation are typed with; above the store, those Protocols are the only store types."""

from __future__ import annotations

import ast
from pathlib import Path

from chatmem.store import Store, TurnRecord
from chatmem.store.protocols import (
    FactRepository,
    HistoryRepository,
    MemoryStateRepository,
    MemoryStore,
    PrivacyStore,
    RecallRepository,
    RedactionRepository,
    RetentionRepository,
    SessionRepository,
    TurnRepository,
    TurnStore,
    VectorRepository,
)

PACKAGE = Path(__file__).resolve().parents[2] / "chatmem"


def test_store_is_every_repository(tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        # mypy checks these assignments (chatmem/store/__init__.py does so in `mypy chatmem`);
        # at run time, each Protocol's methods are the store's.
        history: HistoryRepository = store
        state: MemoryStateRepository = store
        facts: FactRepository = store
        vectors: VectorRepository = store
        recall: RecallRepository = store
        sessions: SessionRepository = store
        turns: TurnRepository = store
        memory: MemoryStore = store
        engine: TurnStore = store
        retention: RetentionRepository = store
        redaction: RedactionRepository = store
        privacy: PrivacyStore = store
        session = sessions.create_session("s", "window")
        assert history.turn_count(session.id) == 0
        assert state.strategy_state(session.id, "window") == {}
        assert facts.session_names([session.id]) == {session.id: "s"}
        assert vectors.count_without_vectors("hash:8", session.id) == 0
        assert recall.count_before(session.id, 1) == 0
        assert memory.latest_summary(session.id, "summary") is None
        assert engine.find_session("s") == session
        recorded = turns.record_turn(TurnRecord(
            session_id=session.id, status="failed", input="hi", context={},
            strategy="window", created_at=turns.now()))
        assert (recorded.number, recorded.status) == (1, "failed")
        assert [s.name for s in retention.user_sessions("nobody")] == []
        assert redaction.messages_containing([session.id], ["hi"]) == []
        assert privacy.session_by_id(session.id) == session


def _store_names(path: Path) -> list[tuple[int, bool]]:
    """(line, is a call) of each use of the name `Store` in a module, imports left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return [(n.lineno, id(n) in calls) for n in ast.walk(tree)
            if isinstance(n, ast.Name) and n.id == "Store"]


def test_above_the_store_the_store_is_typed_by_its_protocols() -> None:
    # The concrete class may be built (a scratch store in memory), never be a type: the
    # engine, memory, evaluation and the privacy policy say how little of the store they use.
    modules = [p for package in ("engine", "memory", "evaluation")
               for p in sorted((PACKAGE / package).rglob("*.py"))]
    modules += [PACKAGE / "privacy" / f"{name}.py" for name in ("retention", "archive", "purge")]
    modules += [PACKAGE / "history.py"]
    typed = [f"{p.relative_to(PACKAGE.parent)}:{line}"
             for p in modules for line, is_call in _store_names(p) if not is_call]
    assert typed == []


def test_the_check_sees_an_annotation(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f(store: Store) -> None:\n    Store(':memory:')\n", encoding="utf-8")
    assert _store_names(module) == [(1, False), (2, True)]
