"""`retrieval`: earlier turns most relevant to the input, plus the recent turns.

Like VectorStoreRetrieverMemory, but over the SQLite FTS5 index (BM25) the
store keeps anyway, so it needs no embeddings and never mixes stale answers
in silently: recalled turns are whole, in time order, and labelled with
their turn number and score. CJK text is matched as character bigrams (see
chatmem.fts). Without a stored index (a transcript held in memory) the same
terms are scored with BM25 in Python, so replays rank alike.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from chatmem import fts
from chatmem.memory.base import (
    BaseStrategy,
    Context,
    ContextRequest,
    HistoryTurn,
    Param,
    Part,
    assemble,
    dropped_note,
    fit_newest_turns,
    history_part,
    span,
)

MESSAGES_PER_TURN_SEARCHED = 6


class RetrievalStrategy(BaseStrategy):
    name = "retrieval"
    description = "Recall the top_k earlier turns most relevant to the input (FTS5 BM25) + recent."
    PARAMS = (
        Param("top_k", int, 4, "how many earlier turns to recall", minimum=0),
        Param("recent", int, 2, "how many recent turns to always send", minimum=0),
    )

    def build(self, request: ContextRequest) -> Context:
        top_k, recent = self.params["top_k"], self.params["recent"]
        total = request.history.turn_count()
        turns = fit_newest_turns(request.history.newest_first(), room=None, limit=recent)
        first_recent = turns[0].number if turns else total + 1
        scores = recall_scores(request, request.input.content, first_recent, top_k)
        recalled: list[HistoryTurn] = []
        for number in sorted(scores):
            recalled.extend(request.history.turns(number, number))
        parts: list[Part] = []
        if recalled:
            listed = ", ".join(f"turn {t.number} ({scores[t.number]:.2f})" for t in recalled)
            parts.append(Part("recalled", tuple(m for t in recalled for m in t.messages),
                              f"retrieval top_k={top_k}: {listed}",
                              scores=tuple((t.number, scores[t.number]) for t in recalled)))
        dropped = dropped_note(total, turns)
        if dropped and recalled:
            dropped += f" except {len(recalled)} recalled"
        reason = f"retrieval recent={recent}: {span([t.number for t in turns])}"
        if dropped:
            reason += f"; {dropped}"
        history = history_part(turns, reason)
        if history:
            parts.append(history)
        return assemble(request, parts, budget=self.budget(request), dropped=dropped)


def recall_scores(
    request: ContextRequest, query: str, before_turn: int, top_k: int
) -> dict[int, float]:
    """Turn number → score of the top_k turns before `before_turn` that match the query."""
    if top_k <= 0 or before_turn <= 1:
        return {}
    state = request.state
    best: dict[int, float] = {}
    if state is not None:
        limit = top_k * MESSAGES_PER_TURN_SEARCHED
        for record, score in state.search(query, before_turn=before_turn, limit=limit):
            best[record.turn] = max(score, best.get(record.turn, score))
    else:
        best = bm25_turns(request.history.turns(1, before_turn - 1), query)
    # Higher score first; among equals the later turn, as it is the fresher statement.
    ranked = sorted(best.items(), key=lambda item: (item[1], item[0]), reverse=True)
    return dict(ranked[:top_k])


def bm25_turns(turns: Sequence[HistoryTurn], query: str, k1: float = 1.2,
               b: float = 0.75) -> dict[int, float]:
    """Okapi BM25 of each message against the query's terms, best per turn."""
    wanted = set(fts.query_terms(query))
    docs = [(t.number, Counter(fts.index_terms(m.content))) for t in turns for m in t.messages]
    if not wanted or not docs:
        return {}
    average = sum(sum(c.values()) for _, c in docs) / len(docs) or 1.0
    frequency = {w: sum(1 for _, c in docs if w in c) for w in wanted}
    best: dict[int, float] = {}
    for number, counts in docs:
        length = sum(counts.values())
        score = 0.0
        for word in wanted & counts.keys():
            idf = math.log((len(docs) - frequency[word] + 0.5) / (frequency[word] + 0.5) + 1)
            tf = counts[word]
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
        if score > 0:
            best[number] = max(score, best.get(number, score))
    return best
