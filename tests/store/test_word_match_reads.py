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


@pytest.mark.sqlite_only(reason="SQLite's ORDER BY kept equal scores in the index's order,"
                         " which word_scores now sorts itself (PostgreSQL sorts in SQL)")
def test_equal_scores_come_in_the_index_s_order_and_a_limit_keeps_the_first(
        store: Store) -> None:
    mine = store.sessions.create_session("s", "window", {})
    store.history.import_messages(mine.id, [
        {"role": "user", "content": text} for text in
        ["杭州 walnut", "杭州 walnut tea tea", "杭州 walnut"] * 3 + ["walnut 杭州 杭州"]])
    found = store.db.word_scores(["杭州", "walnut"], mine.id, None, 20)
    ties = [message_id for message_id, _, score in found if score == found[-1][2]]
    assert len(found) == 10 and len(ties) == 3  # the three long ones score lowest
    for level in {score for _, _, score in found}:
        equal = [message_id for message_id, _, score in found if score == level]
        assert equal == sorted(equal), level
    assert [score for _, _, score in found] == sorted((s for _, _, s in found), reverse=True)
    for limit in (1, 4, 9):
        assert store.db.word_scores(["杭州", "walnut"], mine.id, None, limit) == found[:limit]
