"""What recall's word search finds, as message records: the production search, read back."""

from __future__ import annotations

from chatmem.store import MessageRecord, Store


def match_scores(store: Store, session_id: int, query: str, *, before_turn: int,
                 limit: int) -> dict[int, float]:
    """Position → BM25 of the session's best `limit` matches of `query` before `before_turn`
    (store.recall.word_matches' scores, as recall ranks them)."""
    return store.recall.word_matches(session_id, query, before_turn=before_turn,
                                     limit=limit).scores


def matches(store: Store, session_id: int, query: str,
            limit: int = 20) -> list[tuple[MessageRecord, float]]:
    """The session's messages matching `query` (match_scores), best BM25 first."""
    scores = match_scores(store, session_id, query, before_turn=2**62, limit=limit)
    records = store.recall.messages_at(session_id, scores)
    return [(records[p], score)
            for p, score in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]
