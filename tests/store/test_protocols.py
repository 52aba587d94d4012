"""Each of the Store's repositories implements its Protocol, and the Store holds the
repositories that a strategy, an engine and the privacy policy are typed with; above the
store, those Protocols are the only store types."""

from __future__ import annotations

import ast
from pathlib import Path

from chatmem.store import Store, TurnRecord
from chatmem.store.privacy_protocols import PrivacyStore, RedactionRepository
from chatmem.store.protocols import (
    FactRepository,
    HistoryRepository,
    ImageRepository,
    LeaseRepository,
    MemoryStateRepository,
    MemoryStore,
    RecallRepository,
    RetentionRepository,
    SessionRepository,
    TurnRepository,
    TurnStore,
    VectorRepository,
)

PACKAGE = Path(__file__).resolve().parents[2] / "chatmem"


def test_each_repository_is_its_protocol(tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        # mypy checks these assignments (chatmem/store/__init__.py does so in `mypy chatmem`);
        # at run time, each Protocol's methods are its repository's.
        history: HistoryRepository = store.history
        state: MemoryStateRepository = store.memory
        facts: FactRepository = store.facts
        vectors: VectorRepository = store.vectors
        leases: LeaseRepository = store.leases
        recall: RecallRepository = store.recall
        sessions: SessionRepository = store.sessions
        turns: TurnRepository = store.turns
        images: ImageRepository = store.images
        retention: RetentionRepository = store.retention
        redaction: RedactionRepository = store.redactions
        session = sessions.create_session("s", "window")
        assert history.turn_count(session.id) == 0
        assert state.strategy_state(session.id, "window") == {}
        assert facts.facts(session_id=session.id) == []
        assert sessions.session_names([session.id]) == {session.id: "s"}
        assert vectors.count_without_vectors("hash:8", session.id) == 0
        assert leases.index_lease(session.id, "hash:8") is None
        assert recall.count_before(session.id, 1) == 0
        assert state.latest_summary(session.id, "summary") is None
        recorded = turns.record_turn(TurnRecord(
            session_id=session.id, status="failed", input="hi", context={},
            strategy="window", created_at=store.now()))
        assert (recorded.number, recorded.status) == (1, "failed")
        images.keep_images(session.id, [])
        assert store.images.images(session.id) == []
        assert [s.name for s in retention.user_sessions("nobody")] == []
        assert redaction.messages_containing([session.id], ["hi"]) == []


def test_the_store_is_what_each_consumer_reaches(tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        memory: MemoryStore = store
        engine: TurnStore = store
        privacy: PrivacyStore = store
        session = engine.sessions.create_session("s", "window")
        # One repository object per aggregate, built once: every consumer sees the same one.
        assert memory.history is engine.history is privacy.history is store.history
        assert memory.facts is privacy.facts is store.facts
        assert engine.turns is store.turns and engine.retention is privacy.retention
        assert memory.sessions.find_session("s") == session
        assert privacy.sessions.session_by_id(session.id) == session


def test_the_store_is_a_small_facade() -> None:
    # The repositories and the Store's own few members (connection, transaction, time,
    # where it is): the methods live on the repositories, not on the Store.
    members = {name for name in dir(Store) if not name.startswith("_")}
    assert members == {"check_writable", "clear_log", "clock", "close", "empty_standing_in",
                       "encrypted", "location", "moved", "now", "path", "tidy", "vacuum",
                       "write"}
    with Store(":memory:") as store:
        repositories = {name for name, value in vars(store).items()
                        if not name.startswith("_") and name not in ("connection", "db")}
        assert repositories == {"history", "sessions", "turns", "memory", "facts", "recall",
                                "vectors", "forks", "retention", "redactions", "logs",
                                "leases", "images"}
        assert not any(hasattr(store, name) for name in ("messages", "commit_turn",
                                                           "upsert_fact", "fork_session"))


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


TEST_ONLY = {
    "Backend.unindex_words": "index_words' inverse, which the index's migration tests put old"
                             " entries back with (SQLite's drops its word counts too)",
    "VectorRepository.vector_rows": "the stored vectors as records, context vectors with"
                                    " them, that the tests of forks, purges and row security"
                                    " compare; recall reads them packed (vector_batch)",
}
"""Protocol methods no chatmem code calls, each with why it stays."""


def uncalled_methods(protocols: list[Path], package: Path) -> list[str]:
    """Public methods of the Protocols in `protocols` whose name no module of `package`
    reads as an attribute (`x.name`): only tests would call them."""
    used = {node.attr for path in package.rglob("*.py")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute)}
    return sorted(f"{cls.name}.{f.name}" for path in protocols
                  for cls in ast.parse(path.read_text(encoding="utf-8")).body
                  if isinstance(cls, ast.ClassDef)
                  for f in cls.body if isinstance(f, ast.FunctionDef)
                  and not f.name.startswith("_") and f.name not in used)


def test_every_repository_method_has_a_caller_in_chatmem() -> None:
    # counted_messages_at (candidate_rows' twin as records) and match_scores (word_matches'
    # scores) had none: tests were their only callers.
    protocols = [PACKAGE / "store" / name for name in ("protocols.py", "privacy_protocols.py",
                                                       "backend.py")]
    assert uncalled_methods(protocols, PACKAGE) == sorted(TEST_ONLY)


def test_the_caller_check_sees_a_method_nobody_calls(tmp_path: Path) -> None:
    (tmp_path / "p.py").write_text("class R(Protocol):\n    def used(self) -> int: ...\n"
                                   "    def unused(self) -> int: ...\n"
                                   "    def _own(self) -> int: ...\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("def f(r):\n    return r.used()\n", encoding="utf-8")
    assert uncalled_methods([tmp_path / "p.py"], tmp_path) == ["R.unused"]
