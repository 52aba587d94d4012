"""Whether other conversations share the index is asked once a retrieval build: its
search of later mentions takes the answer its first search read."""

from __future__ import annotations

from pathlib import Path

from meter import traced
from registered import open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

CHECK = "SELECT EXISTS (SELECT 1 FROM messages WHERE session_id <"
"""SQLite's look for another conversation's messages (SqliteWords._session_ranges)."""


def history(n: int, place: str) -> list[dict[str, str]]:
    said = [f"item {i}: we agreed on delivery to {place} on March {i}, budget {i}000 yuan"
            if i % 2 else f"第{i}项 我们决定{place}交货 预算{i}千元" for i in range(1, n + 1)]
    return [m for text in said for m in ({"role": "user", "content": text},
                                         {"role": "assistant", "content": f"noted: {text}"})]


def checks_in_a_build(store: Store, engine: Engine[Store], question: str) -> int:
    with traced(store) as seen:
        engine.build_context(question)
    return sum(sql.startswith(CHECK) for sql in seen)


def test_a_build_asks_once_whether_others_are_stored_and_asks_again_next_build(
        tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        settings = Settings(embeddings=EmbeddingsSection(provider="none"))
        engine = open_session(store, settings, ScriptedProvider(), "mine", strategy="retrieval",
                              params={"max_tokens": 300, "recent": 1})
        store.history.import_messages(engine.session.id, history(40, "杭州 Hangzhou"))
        engine.catch_up()
        for question in ("what did we agree for item 7 in Hangzhou?", "第8项 杭州 预算多少？"):
            assert checks_in_a_build(store, engine, question) == 1, question
        # Another conversation stored since: the next build asks again, as a fresh engine's.
        other = store.sessions.create_session("other", "window", {})
        store.history.import_messages(other.id, history(5, "北京 Beijing"))
        question = "what did we agree for item 7 in Hangzhou?"
        again = checks_in_a_build(store, engine, question)
        fresh = open_session(store, settings, ScriptedProvider(), "mine", strategy="retrieval",
                             params={"max_tokens": 300, "recent": 1})
        assert again == checks_in_a_build(store, fresh, question) > 1
