"""What a retrieval turn writes, statement by statement: its messages' word-index entries in
one INSERT, every token count it caches in one, and after the commit no read of what the
commit itself just found (the history's turn count, the session's erasures). Each statement
of a turn is ~10 us of it. The rows stored are the same either way."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conftest import History
from matches import match_scores
from meter import traced
from registered import open_session

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.memory.indexing import Indexing
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

SETTINGS = Settings(system="Be brief.", embeddings=EmbeddingsSection(provider="hash"))


def _engine(store: Store) -> object:
    session = store.sessions.create_session("w", "retrieval", system="Be brief.")
    messages = []
    for n in range(30):
        user = "我们下个月去杭州看西湖。" if n == 7 else f"Note {n}: the bus to item {n} again."
        messages += [{"role": "user", "content": user},
                     {"role": "assistant", "content": f"Noted, item {n}."}]
    # Imported: no token count cached, so the turn's context caches the counts it sends.
    store.history.import_messages(session.id, messages)
    embedder = HashEmbedder()
    engine = open_session(store, SETTINGS, ScriptedProvider(), "w", strategy="retrieval",
                          embedder=embedder)
    engine.background_indexing = False
    engine.indexing = Indexing(store, session.id, background=False)
    return engine


def _traced(store: Store, turn: object) -> list[str]:
    with traced(store) as statements:
        turn()  # type: ignore[operator]
    return statements


def _commit(statements: list[str]) -> list[str]:
    """The statements of the turn's own commit (its first write that inserts messages)."""
    start = next(i for i, s in enumerate(statements) if s.startswith("INSERT INTO messages "))
    begin = max(i for i in range(start) if statements[i] == "BEGIN IMMEDIATE")
    return statements[begin:statements.index("COMMIT", start) + 1]


def _after_commit(statements: list[str]) -> list[str]:
    """The statements after the turn's own commit: the memory update and the vectors' write."""
    inserted = next(i for i, s in enumerate(statements) if s.startswith("INSERT INTO messages "))
    return statements[statements.index("COMMIT", inserted) + 1:]


def test_a_turns_commit_indexes_and_counts_in_one_statement_each(history: History) -> None:
    with history.open() as store:
        engine = _engine(store)
        engine.run_turn("What did we say about item 7 and 西湖？")  # type: ignore[attr-defined]
        if history.is_file:
            statements = _traced(store, lambda: engine.run_turn(  # type: ignore[attr-defined]
                "And item 12? The bus again, 西湖 too."))
            commit = _commit(statements)
            assert sum(s.startswith("INSERT INTO messages_fts") for s in commit) == 1, commit
            assert sum(s.startswith("INSERT INTO token_counts") for s in commit) == 1, commit
        else:
            engine.run_turn("And item 12? The bus again, 西湖 too.")  # type: ignore[attr-defined]
        turn = store.turns.turn(engine.session.id)  # type: ignore[attr-defined]
        counter = engine.counter  # type: ignore[attr-defined]
        # The new messages' counts, and those of every message the context sent, are cached.
        for message_id, role, text in ((turn.user_message_id, "user", turn.input),
                                       (turn.assistant_message_id, "assistant", turn.reply)):
            assert store.db.execute(
                "SELECT tokens FROM token_counts WHERE message_id = ? AND tokenizer = ?",
                [message_id, counter.key]).fetchall()[0][0] == counter.count_message(role, text)
        sent = [m for p in turn.context["parts"] for m in p["messages"] if m.get("id")]
        assert sent
        for m in sent:
            assert store.db.execute(
                "SELECT tokens FROM token_counts WHERE message_id = ? AND tokenizer = ?",
                [m["id"], counter.key]).fetchall()[0][0] == m["tokens"]
        # Searchable by its words, in English and Chinese.
        positions = match_scores(store, engine.session.id, "西湖",  # type: ignore
                             before_turn=10_000, limit=50)
        assert store.recall.last_position(engine.session.id) - 1 in positions  # type: ignore


def test_after_the_commit_the_update_reads_no_turn_count_and_no_erasures(
        history: History) -> None:
    if not history.is_file:
        return
    with history.open() as store:
        engine = _engine(store)
        engine.run_turn("What did we say about item 7?")  # type: ignore[attr-defined]
        statements = _traced(store, lambda: engine.run_turn(  # type: ignore[attr-defined]
            "And item 12?"))
        after = _after_commit(statements)
        update = after[:after.index("BEGIN IMMEDIATE")]  # up to the vectors' write
        assert not [s for s in update if "max(turn)" in s], update
        # The backlog inline: the commit's check under its lock was the last read of the
        # count (e983dc79; test_erasure_reads counts the whole turn's, and a background's).
        assert not [s for s in update if s.startswith("SELECT erasures")], update


def test_a_turns_vectors_are_stored_in_one_statement_a_table(history: History) -> None:
    with history.open() as store:
        engine = _engine(store)
        engine.run_turn("What did we say about item 7?")  # type: ignore[attr-defined]
        turn = lambda: engine.run_turn("And 西湖, item 12?")  # type: ignore[attr-defined]  # noqa: E731
        if history.is_file:
            statements = _traced(store, turn)
            after = _after_commit(statements)
            saved = after[after.index("BEGIN IMMEDIATE"):after.index("COMMIT")]
            assert sum(s.startswith("INSERT INTO message_vectors") for s in saved) == 1, saved
            assert sum(s.startswith("INSERT INTO vector_cache") for s in saved) == 1, saved
        else:
            turn()
        last = store.turns.turn(engine.session.id)  # type: ignore[attr-defined]
        embedder = engine.embedder  # type: ignore[attr-defined]
        ids = {last.user_message_id, last.assistant_message_id}
        stored = store.vectors.vectors_at(engine.session.id, embedder.key,  # type: ignore
                                          range(1, 200))
        assert ids <= {v.message_id for v in stored}
        # Each text's vector is found again by its digest (the cache points at it).
        from chatmem.embeddings.base import text_digest
        found = store.vectors.cached_vectors(embedder.key,
                                             [text_digest(last.input), text_digest(last.reply)])
        assert len(found) == 2


def test_a_turns_vectors_write_on_sqlite_is_its_two_inserts_alone(history: History) -> None:
    """No DELETE of the texts' stale cache entries before the insert: on SQLite the insert
    repoints them (an entry whose message is gone), one statement of ~40 a turn less."""
    if not history.is_file:
        return  # PostgreSQL keeps its DELETE: an entry may point into another role's session
    with history.open() as store:
        engine = _engine(store)
        engine.run_turn("What did we say about item 7?")  # type: ignore[attr-defined]
        after = _after_commit(_traced(store, lambda: engine.run_turn(  # type: ignore
            "And 西湖, item 12?")))
        saved = after[after.index("BEGIN IMMEDIATE"):after.index("COMMIT") + 1]
        assert [s.split(" (")[0] for s in saved] == [
            "BEGIN IMMEDIATE", "INSERT INTO message_vectors", "INSERT INTO vector_cache",
            "COMMIT"], saved


def test_a_cache_entry_whose_message_is_gone_is_repointed(db_path: Path) -> None:
    """A message deleted by another tool with foreign keys off leaves its cache entry
    pointing nowhere: the next message of the same text takes the entry over."""
    with Store(db_path) as store:
        engine = _engine(store)
        engine.run_turn("西湖 again, item 3?")  # type: ignore[attr-defined]
        gone = store.turns.turn(engine.session.id).user_message_id  # type: ignore
    conn = sqlite3.connect(db_path)  # foreign keys off, as sqlite3's shell has them
    with conn:
        conn.execute("DELETE FROM messages WHERE id = ?", [gone])
        conn.execute("DELETE FROM message_vectors WHERE message_id = ?", [gone])
    conn.close()
    with Store(db_path) as store:
        engine = open_session(store, SETTINGS, ScriptedProvider(), "w", strategy="retrieval",
                              embedder=HashEmbedder())
        engine.background_indexing = False  # type: ignore[attr-defined]
        engine.indexing = Indexing(store, engine.session.id,  # type: ignore[attr-defined]
                                   background=False)
        engine.run_turn("西湖 again, item 3?")  # type: ignore[attr-defined]
        again = store.turns.turn(engine.session.id).user_message_id  # type: ignore
        from chatmem.embeddings.base import text_digest
        pointed = store.db.execute(
            "SELECT message_id FROM vector_cache WHERE digest = ?",
            [text_digest("西湖 again, item 3?")]).fetchall()
        assert [tuple(r) for r in pointed] == [(again,)]
        assert len(store.vectors.cached_vectors(HashEmbedder().key,
                                                [text_digest("西湖 again, item 3?")])) == 1


def test_a_chunk_holding_a_replaced_text_is_indexed_whole(history: History) -> None:
    """A redaction indexes texts already indexed: the one statement for the chunk fails, and
    each entry is replaced on its own, new ones beside them kept."""
    with history.open() as store:
        session = store.sessions.create_session("r", "retrieval")
        store.history.import_messages(session.id, [
            {"role": "user", "content": "the walrus in Hangzhou"},
            {"role": "assistant", "content": "noted"}])
        first = store.recall.last_position(session.id) - 1
        at = store.recall.messages_at(session.id, [first, first + 1])
        ids = [at[first].id, at[first + 1].id]  # by position: the rows come in no set order
        with store.db.write():
            store.db.index_words([(ids[0], "the zebra in 杭州"), (ids[1], "noted")])
        def found(word: str) -> set[int]:
            return set(match_scores(store, session.id, word, before_turn=10, limit=10))
        assert found("zebra") == {first}
        assert found("杭州") == {first}
        assert found("walrus") == set()


def test_the_backlog_finds_a_turns_messages_and_the_last_id_in_one_read(
        history: History) -> None:
    with history.open() as store:
        engine = _engine(store)
        engine.run_turn("What did we say about item 7?")  # type: ignore[attr-defined]
        turn = lambda: engine.run_turn("And 西湖, item 12?")  # type: ignore[attr-defined]  # noqa: E731
        if history.is_file:
            statements = _traced(store, turn)
            after = _after_commit(statements)
            looks = [s for s in after[:after.index("BEGIN IMMEDIATE")]
                     if "FROM messages" in s and "vector_cache" not in s]
            assert len(looks) == 1, looks
        else:
            turn()
        key = engine.embedder.key  # type: ignore[attr-defined]
        session_id = engine.session.id  # type: ignore[attr-defined]
        assert store.vectors.count_without_vectors(key, session_id) == 0
        # Nothing missing: the id of the last message all the same.
        pending, last = store.vectors.pending_and_last(key, session_id, limit=10,
                                                       dimensions=256)
        assert pending == []
        assert last == store.vectors.last_message_id(session_id) > 0
        store.history.import_messages(session_id, [{"role": "user", "content": "新的一条"}])
        pending, last = store.vectors.pending_and_last(key, session_id, limit=10,
                                                       dimensions=256)
        assert [p.content for p in pending] == ["新的一条"]
        assert last == pending[0].message_id
