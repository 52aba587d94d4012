"""What recall's word search finds, as message records: the production search, read back."""

from __future__ import annotations

from chatmem.store import MessageRecord, Store


def matches(store: Store, session_id: int, query: str,
            limit: int = 20) -> list[tuple[MessageRecord, float]]:
    """The session's messages matching `query` (store.recall.match_scores), best BM25 first."""
    scores = store.recall.match_scores(session_id, query, before_turn=2**62, limit=limit)
    records = store.recall.messages_at(session_id, scores)
    return [(records[p], score)
            for p, score in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]
