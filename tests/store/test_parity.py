"""SQLite and PostgreSQL hand back the same Python values for the same history.

The same conversation, at the same clock times, through the engine and every
stateful strategy, on a file and on a database: every record the store reads
back is equal field by field, types included (bytes not memoryview, int not
bool or Decimal, float not Decimal, text times).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cached_counts import cached_counts
from matches import match_scores
from registered import open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store, VectorRow

LINES = [
    "My name is Ana and my order is ORD-7731.",
    "我们五月去杭州旅行，预算五千元。",
    "The delivery goes to 12 Oak Street, not the blue gate.",
    "What did I order, and where does it go?",
    "请记住：酒店是琉璃客栈，三月十五日入住。",
    "Actually my order is ORD-7732 now.",
]
STRATEGIES = ["entity", "summary-buffer:max_tokens=120", "summary", "retrieval"]


def ticking() -> Iterator[datetime]:
    moment = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    while True:
        moment += timedelta(seconds=7)
        yield moment


CLOCKED = {"latency_ms"}
"""Fields measured on the wall clock, not set by the store's: the same only by chance."""


def typed(value: Any) -> Any:
    """A value with its type made part of it, recursively (1 == True == 1.0 otherwise)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return typed(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items() if k not in CLOCKED}
    if isinstance(value, list | tuple):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


def everything(location: str | Path) -> dict[str, Any]:
    times = ticking()
    with Store(location, clock=lambda: next(times)) as store:
        settings = Settings(system="Be brief.", user="ana", user_facts=True,
                            embeddings=EmbeddingsSection(provider="none"))
        for strategy in STRATEGIES:
            name, _, param = strategy.partition(":")
            key, _, value = param.partition("=")
            engine = open_session(store, settings, ScriptedProvider(), name.replace("-", "_"),
                                  strategy=name, params={key: value} if key else {})
            for line in LINES:
                engine.run_turn(line)
        session = store.sessions.session("retrieval")
        store.vectors.save_vectors("stub", 2, [VectorRow(m.id, b"\x00\x01" * 4, b"\x02\x03" * 4)
                                               for m in store.history.messages(session.id)[:3]])
        seen: dict[str, Any] = {"sessions": store.sessions.list_sessions()}
        for strategy in STRATEGIES:
            name = strategy.partition(":")[0]
            sid = store.sessions.session(name.replace("-", "_")).id
            facts = store.facts.facts(session_id=sid, include_deleted=True)
            seen[name] = {
                "session": store.sessions.session_by_id(sid),
                "messages": store.history.messages(sid),
                "turns": store.turns.turns(sid),
                "summaries": store.memory.summaries(sid),
                "facts": facts,
                "fact_history": store.facts.fact_history([f.id for f in facts]),
                "state": store.memory.strategy_state(sid, name),
                "counts": cached_counts(store, sid, "cl100k_base"),
                "words": match_scores(store, sid, "ORD-7731 杭州", before_turn=99, limit=5),
                "candidates": sorted(store.recall.candidate_rows(sid, range(1, 20), "cl100k_base")),
            }
        seen["user facts"] = store.facts.facts(user="ana", include_deleted=True)
        seen["vectors"] = store.vectors.vector_rows(session.id, "stub")
        names = {store.sessions.session(name).id: name for name in (
            s.partition(":")[0].replace("-", "_") for s in STRATEGIES)}
        return by_name(typed(seen), names)


SESSION_IDS = {"session_id", "source_session_id"}


def by_name(value: Any, names: dict[int, str], key: str = "") -> Any:
    """Session ids as their sessions' names: PostgreSQL's are random (p007), a file's count
    from 1; every other value, and every id's type, stays as it is."""
    if isinstance(value, dict):
        record = "strategy" in value and "name" in value and "id" in value
        return {k: by_name(v, names, "session_id" if record and k == "id" else k)
                for k, v in value.items()}
    if isinstance(value, list):
        return [by_name(v, names, key) for v in value]
    if key in SESSION_IDS and value[0] == "int" and value[1] in names:
        return ("int", f"session {names[value[1]]}")
    return value


def test_both_backends_return_identical_values(tmp_path: Path, pg_url: str) -> None:
    on_file, on_server = everything(tmp_path / "h.db"), everything(pg_url)
    assert on_file["retrieval"]["messages"] and on_file["vectors"]
    assert any(v["facts"] for k, v in on_file.items() if isinstance(v, dict) and "facts" in v)
    for key in on_file:
        assert on_server[key] == on_file[key], key
