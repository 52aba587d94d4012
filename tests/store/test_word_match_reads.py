"""A search of a history of one conversation (`RecallTables.word_matches`, every retrieval
build's) reads the index's entries, its IDFs' N, with its words' counts: the highest
message id was a statement of its own each build."""

from __future__ import annotations

import pytest
from meter import metered

from chatmem import fts
from chatmem.store import Store
from chatmem.store.recall import idf


def test_a_search_of_the_only_conversation_reads_the_index_size_with_the_counts(
        store: Store) -> None:
    mine = store.sessions.create_session("北京之旅", "window", {})
    store.history.import_messages(mine.id, [
        {"role": "user", "content": f"第{n}天 北京天气 and walnut tea {n}"} for n in range(6)])
    store.history.import_messages(mine.id, [{"role": "assistant", "content": "oolong 乌龙茶"}])
    newest = max(m.id for m in store.history.messages(mine.id))
    for query in ("walnut oolong", "北京 乌龙茶"):
        with metered(store) as meter:
            found = store.recall.word_matches(mine.id, query, before_turn=10**6, limit=50)
        with metered(store) as search:
            again = store.db.word_scores(list(found.entries), mine.id, 10**6, 50)
        assert {position: score for _, position, score in again} == found.scores
        assert len(found.scores) == 7, query
        # Whether others are stored (SQLite) or the conversation's share of the index
        # (PostgreSQL), the words' counts with the index's entries, then the search.
        assert meter.statements == 2 + search.statements, query
        # The ceiling's IDFs count the index as the highest id, as they did.
        assert found.ceiling == pytest.approx(sum(
            idf(max(newest, n), n) for term, n in found.entries.items()
            if term not in fts.UNSCORED_WORDS)), query
        assert found.ceiling > 0
