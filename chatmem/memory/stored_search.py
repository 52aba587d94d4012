"""The session's word search and stored vectors, read-only, for a strategy of a plugin.

`retrieval` ranks by chatmem's word index (FTS5 or PostgreSQL's, CJK as bigrams) and by
the vectors stored after each turn; a plugin's strategy that recalls by a score of its own
had no way to them but to walk `request.history` whole and embed every message again each
build. `request.search` (and `env.search`) hands it the same two sources, bounded to the
turns its history holds, as stored `Message` values it may send as they are: no SQL, no
store, nothing it can write. README, "Writing a plugin", documents it;
`tests/memory/test_stored_search.py` holds it to that.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem.memory.context import Message
from chatmem.memory.recall_sources import StoredRecall
from chatmem.memory.recall_vectors import held_vectors

if TYPE_CHECKING:
    import numpy as np

    from chatmem.embeddings import Embedder
    from chatmem.memory.history_view import HistoryView
    from chatmem.memory.state import SessionState
    from chatmem.tokens import TokenCounter

MOST = 400
"""The most matches one search gives (retrieval reads as many a build)."""


@dataclass(frozen=True)
class Found:
    """A stored message a search found, and how well it matched (higher is better)."""

    message: Message
    """As the history gives it (stored text, tokens as sent): send it as it is."""
    score: float
    """`words`: its BM25 for the query; `meaning`: the cosine of its vector and the query's."""


class StoredSearch:
    """Searches of the session's stored messages in the turns the history holds."""

    def __init__(self, history: HistoryView, state: SessionState, counter: TokenCounter,
                 embedder: Embedder | None) -> None:
        self._history, self._state, self._embedder = history, state, embedder
        self._recall = StoredRecall(state, counter, 0.0, embedder)

    def _end(self, before_turn: int | None) -> int:
        """The first turn not searched: `before_turn`, within the turns the history holds."""
        end = self._history.turn_count() + 1
        return end if before_turn is None else max(1, min(before_turn, end))

    def _held(self, before_turn: int | None = None) -> int:
        """How many messages (positions) the turns before `before_turn` hold."""
        return self._recall.count_before(self._end(before_turn))

    def _messages(self, positions: list[int]) -> dict[int, Message]:
        candidates = self._recall.candidates(positions)  # a replaced turn's are left out
        return {position: candidates.message(i)
                for i, position in enumerate(candidates.positions)}

    def words(self, text: str, *, limit: int = 20,
              before_turn: int | None = None) -> list[Found]:
        """The stored messages holding `text`'s words, best first (BM25, as `retrieval`
        searches: the query's rarest words, Chinese as character pairs), at most `limit`
        (up to 400), of the turns before `before_turn` (None: every turn the history
        holds)."""
        limit = max(0, min(limit, MOST))
        end = self._end(before_turn)
        if not limit or end <= 1 or not text.strip():
            return []
        matches = self._recall.bm25(text, end)
        best = sorted(matches.scores, key=lambda p: (-matches.scores[p], p))[:limit]
        found = self._messages(best)
        return [Found(found[p], float(matches.scores[p])) for p in best if p in found]

    def meaning(self, text: str, *, limit: int = 20,
                before_turn: int | None = None) -> list[Found]:
        """The stored messages nearest `text` in meaning, best first (the cosine of their
        stored vectors and the query's), at most `limit` (up to 400), of the turns before
        `before_turn`; none without an embedder (the strategy's `needs_embedder` opens it)
        and none of messages not embedded yet (they are, after each turn)."""
        limit = max(0, min(limit, MOST))
        embedder = self._embedder
        count = (self._held(before_turn) if embedder is not None and limit and text.strip()
                 else 0)
        if embedder is None or not count:
            return []
        import numpy as np

        asked = np.asarray(embedder.embed([text], query=True)[0], dtype=np.float32)
        vectors = held_vectors(self._state, embedder, count, len(asked))
        if not vectors.count:
            return []
        scores = vectors.own[:count] @ asked
        if vectors.present is not None:
            scores = np.where(vectors.present[:count], scores, -np.inf)
        take = min(limit, vectors.count)
        best = np.argpartition(-scores, take - 1)[:take]
        ordered = [int(i) + 1 for i in sorted(best.tolist(), key=lambda i: (-scores[i], i))]
        found = self._messages(ordered)
        return [Found(found[p], float(scores[p - 1])) for p in ordered if p in found]

    def vectors(self, messages: Iterable[Message]) -> dict[int, np.ndarray]:
        """The stored vectors of `messages` (stored ones: by `id`), each a float32 copy of
        one L2-normalised row; a message not embedded yet, or without an embedder, has
        none."""
        embedder = self._embedder
        ids = [m.id for m in messages if isinstance(m.id, int)]
        if embedder is None or not ids or not embedder.dimensions:
            return {}  # (an endpoint's size is known once it answered: `meaning` asks it)
        placed = self._state.store.history.placed(self._state.session_id, ids)
        count = self._held()
        positions = {i: p for i, (p, _, _) in placed.items() if p <= count}
        if not positions:
            return {}
        vectors = held_vectors(self._state, embedder, count)
        present = vectors.present
        return {i: vectors.own[p - 1].copy() for i, p in positions.items()
                if p <= len(vectors.own) and (present is None or bool(present[p - 1]))}
