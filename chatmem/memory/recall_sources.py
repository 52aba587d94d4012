"""Where `retrieval` gets what it ranks: BM25 matches, sittings, messages and vectors.

`StoredRecall` reads a history file, each read bounded by what the ranking
needs: the best matches of a search that scores a bounded number of index
entries, the sitting starts (through an index, then only what is new), the
candidates it keeps by position. Vectors, the one thing a dense ranking needs
for every message, are loaded once per process into arrays kept on the
session's state (per model) and extended as they are stored.

A build only reads: the vectors are computed after turns commit
(chatmem.memory.vector_backlog), and a message without one yet is ranked by
words alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, tzinfo
from typing import TYPE_CHECKING

from chatmem.memory.context import Message
from chatmem.memory.message_counts import sent_text
from chatmem.memory.packing import POOL, Known, Ranked
from chatmem.memory.ranking import (
    Sittings,
    WordScores,
    dense_scores,
)
from chatmem.memory.recall_vectors import Dense, Vectors, candidate_dense, held_vectors, rows_of
from chatmem.store.records import MessageRecord
from chatmem.store.stored_values import read_time
from chatmem.timestamps import local_moment, local_moments

DATABASE_RANKING_FROM = 20_000
"""Messages from which pgvector picks the dense candidates. Below it numpy ranks every
vector: measured at 2,000 and 10,000 messages (benchmarks/pg_vectors.py), a build cost
150-300 ms through the database and 8-12 ms in numpy once a process holds the vectors
(117-553 ms for its first build), so the database pays only where holding them does not."""

if TYPE_CHECKING:
    import numpy as np

    from chatmem.embeddings import Embedder
    from chatmem.memory.state import SessionState
    from chatmem.store.recall import CandidateRow, WordMatches
    from chatmem.tokens import TokenCounter

PROBES = 16
"""Messages read per step of the search for a time (see first_at_or_after)."""
SEARCH_LIMIT = 400
"""BM25 matches read per build (best first): enough to rank, bounded at any history length."""
KNOWN_AT_MOST = 20_000
"""Messages whose said key and speaker label a session keeps (packing.Known): a few MB, some
hundred builds' pools."""


@dataclass
class _SittingCache:
    """Where one session's sittings start for one `gap_hours`, as read so far."""

    starts: list[int] = field(default_factory=list)
    """Positions where a sitting starts, up to `checked`."""
    checked: int = 0
    """The last position whose sitting start is known."""


class Candidates:
    """The messages at some positions, in the order asked (those history holds), with
    their tokens as sent: what packing needs, read at once and held as the rows came,
    for hundreds of candidates of which a few dozen are sent."""

    def __init__(self, rows: Sequence[CandidateRow], tokens: Sequence[int],
                 known: Known | None = None, messages: dict[int, Message] | None = None,
                 ) -> None:
        self.rows, self.tokens, self.known = rows, tokens, known
        self.positions = [row[0] for row in rows]
        self.messages = messages
        """Where each candidate's message as sent is kept by position across builds (None:
        nowhere): a build sends some sixty, most of them the last build's too."""

    def messages_of(self, indexes: Sequence[int]) -> list[Message]:
        """`message` of each of `indexes`, in one call: a build sends some sixty, most of
        them made by an earlier build already."""
        made, positions = self.messages, self.positions
        if made is None:
            return [self.message(i) for i in indexes]
        found = []
        for i in indexes:
            message = made.get(positions[i])
            found.append(self.message(i) if message is None else message)
        return found

    def message(self, i: int) -> Message:
        messages = self.messages
        if messages is not None and (made := messages.get(self.positions[i])) is not None:
            return made
        position, message_id, turn, role, content, _, _ = self.rows[i]
        made = Message(role, sent_text(role, content), self.tokens[i], message_id, turn)
        if messages is not None:
            messages[position] = made
        return made

    def ranked(self, words: WordScores, bm25: Mapping[int, float], dense: np.ndarray | None,
               present: np.ndarray | None, fused: np.ndarray | None) -> list[Ranked]:
        """Each candidate's scores (by words, meaning, fused), best first as given."""
        import numpy as np

        at = np.asarray(self.positions, dtype=np.int64) - 1
        scores = words.at_many(at + 1).tolist()
        fused_at = scores if fused is None else fused[at].tolist()
        meanings: list[float | None] = [None] * len(at)
        if dense is not None:
            meanings = dense[at].tolist()
            if present is not None:
                meanings = [m if held else None
                            for m, held in zip(meanings, present[at].tolist(), strict=True)]
        known = self.known
        return [Ranked(message_id, position, turn or 0, role, bm25.get(position, 0.0), score,
                       meaning, relevance, tokens, content, known=known)
                for (position, message_id, turn, role, content, _, _), score, meaning, relevance,
                tokens in zip(self.rows, scores, meanings, fused_at, self.tokens, strict=True)]


class StoredRecall:
    """Recall over a session in a history file."""

    def __init__(self, state: SessionState, counter: TokenCounter, gap_hours: float,
                 embedder: Embedder | None, said_at: datetime | None = None,
                 zone: tzinfo = UTC) -> None:
        self.state, self.counter, self.embedder = state, counter, embedder
        self.said_at = said_at
        self.zone = zone
        """The user's zone: a message's time is read in it (a date alone is that date)."""
        self.gap_hours = gap_hours
        sittings: dict[float, _SittingCache] = state.caches.setdefault("sittings", {})
        self.sitting_cache = sittings.setdefault(gap_hours, _SittingCache())
        self.read: dict[int, CandidateRow] = {}
        """The candidates this build read, by position: their times came with them."""
        self.alone = False
        """This build's search found the conversation alone in the index (`bm25`)."""

    def count_before(self, turn: int) -> int:
        return self.state.store.recall.count_before(self.state.session_id, turn)

    def sittings(self) -> Sittings:
        """Where the session's sittings start: read once, then only what was added."""
        cache = self.sitting_cache
        starts, cache.checked = self.state.store.recall.sitting_starts(
            self.state.session_id, self.gap_hours * 3600, after=cache.checked)
        cache.starts.extend(starts)
        return Sittings(cache.starts)

    def now(self) -> datetime | None:
        """When the input is said (`ContextRequest.said_at`), else the newest message's time:
        the day a replayed transcript's untimed input is read on."""
        return self.said_at if self.said_at is not None else self.newest_time()

    def newest_time(self) -> datetime | None:
        """The time of the session's newest message in memory, in the user's zone (None:
        none, or unreadable)."""
        last = self.state.store.recall.newest_message(self.state.session_id)
        if last is None:
            return None
        cache = self._times()
        if last.position not in cache:
            cache[last.position] = local_moment(last.created_at, self.zone)
        return cache[last.position]

    def first_at_or_after(self, moment: datetime, count: int) -> int:
        """The first of the first `count` positions whose message is dated at or after
        `moment` (count + 1: none), by a 16-way search: a few reads of 16 messages
        at any history length. Messages are taken to be in time order, as a
        conversation is; a message whose time cannot be read is passed over."""
        lo, hi = 1, count + 1  # the answer lies in [lo, hi]
        while lo < hi:
            if hi - lo <= PROBES:
                probe = list(range(lo, hi))
            else:
                step = (hi - lo) / PROBES
                probe = sorted({lo + int(i * step) for i in range(PROBES)})
            times = self.times_at(probe)
            dated = [p for p in probe if p in times]
            first = next((p for p in dated if times[p] >= moment), None)
            before = [p for p in dated if first is None or p < first]
            if hi - lo <= PROBES or not dated:
                return first if first is not None else hi
            lo = before[-1] + 1 if before else lo
            hi = first if first is not None else hi
            if first is None and not before:
                return hi
        return lo

    def times_at(self, positions: Sequence[int]) -> dict[int, datetime]:
        """When the messages at `positions` were said (those whose time can be read), in the
        user's zone, each read once per process."""
        cache = self._times()
        missing = [p for p in positions if p not in cache]
        if missing:
            # A candidate's time came with it (`candidates`): the pool's days cost no read.
            session_id, read = self.state.session_id, self.read
            unread = [p for p in missing if p not in read]
            records = self.state.store.recall.messages_at(session_id, unread) if unread else {}
            said = {position: record.created_at for position, record in records.items()}
            for (position, message_id, turn, role, content, _, created_at) in [
                    read[p] for p in missing if p in read]:  # a list: one call, not one a row
                try:
                    read_time(created_at)
                except (TypeError, ValueError):
                    # As messages_at's records do, a damaged time is named by the record.
                    MessageRecord(message_id, session_id, position, turn, role, content, None,
                                  created_at)
                said[position] = created_at
            # All at once: a session's first builds read a hundred or more new ones each.
            cache.update(zip(missing, local_moments(map(said.get, missing), self.zone),
                             strict=True))
        return {p: t for p in positions if (t := cache.get(p)) is not None}

    def days_at(self, positions: Sequence[int]) -> Mapping[int, date | None]:
        """The day each message at `positions` was said in the user's zone (None: its time
        cannot be read), each worked out once per process: recall asks it of its whole pool
        at every build (recall_days.EarlierDays). Holds other positions too."""
        by_zone: dict[tzinfo, dict[int, date | None]] = self.state.caches.setdefault("days", {})
        days = by_zone.setdefault(self.zone, {})
        missing = [p for p in positions if p not in days]
        if missing:
            times = self.times_at(missing)  # in the user's zone already
            for p in missing:
                moment = times.get(p)
                days[p] = None if moment is None else moment.date()
        return days

    def _times(self) -> dict[int, datetime | None]:
        """The times read so far, by position, in this zone: a date alone is noon in the
        zone it is read in, so each zone keeps its own."""
        by_zone: dict[tzinfo, dict[int, datetime | None]] = self.state.caches.setdefault(
            "times", {})
        return by_zone.setdefault(self.zone, {})

    def bm25(self, query: str, before_turn: int) -> WordMatches:
        matches = self.state.store.recall.word_matches(
            self.state.session_id, query, before_turn=before_turn, limit=SEARCH_LIMIT)
        self.alone = matches.alone
        return matches

    def rare_matches(self, text: str, before_turn: int, most: int) -> WordMatches:
        """The messages holding words of `text` at most `most` messages of the session hold."""
        return self.state.store.recall.rare_word_matches(
            self.state.session_id, text, before_turn=before_turn, most=most,
            limit=SEARCH_LIMIT, alone=self.alone)

    def sent_tokens(self, message: Message) -> int:
        """`message`'s tokens as it is sent (`Message.sent`), counted once per process."""
        assert message.id is not None
        counts = self.state.message_counts(self.counter)
        return counts.sent_tokens(message.id, message.role, message.sent)

    def candidates(self, positions: Sequence[int]) -> Candidates:
        """The messages at `positions` that history holds, in that order, with their
        tokens: those no earlier build read, in one read, and each message's tokens counted
        once per process.

        A session's pools overlap from build to build (97-99% on the benchmark's), and the
        pool was read again whole every build (~150 rows, ~1 ms a turn at 1,000 turns). The
        rows are kept, with their tokens as sent, with the session's other caches: messages
        are appended, and what changes one already stored (a purge, a replaced or restored
        turn) counts an erasure, which empties the caches (Engine.follow_erasures). A
        position with no message in memory is read again each time (a turn shown again after
        a failed replacement brings its messages back). Up to KNOWN_AT_MOST rows, and the
        messages made of them as sent (Candidates.message)."""
        held: dict[int, tuple[CandidateRow, int]] = self.state.caches.setdefault(
            f"candidates:{self.counter.key}", {})
        messages: dict[int, Message] = self.state.caches.setdefault(
            f"candidate_messages:{self.counter.key}", {})
        if len(held) > KNOWN_AT_MOST:
            held.clear()
            messages.clear()
        missing = [p for p in positions if p not in held]
        if missing:
            rows = self.state.store.recall.candidate_rows(self.state.session_id, missing,
                                                          self.counter.key)
            tokens = self.state.message_counts(self.counter).tokens_of(rows)
            held.update(zip([row[0] for row in rows], zip(rows, tokens, strict=True),
                            strict=True))
        found = [pair for p in positions if (pair := held.get(p)) is not None]
        ordered = [row for row, _ in found]
        self.read.update(zip([row[0] for row in ordered], ordered, strict=True))
        # What is worked out of their texts is kept with the session's other caches, up to
        # KNOWN_AT_MOST messages (a long history's pools would otherwise keep them all).
        known: Known = self.state.caches.setdefault("known", Known())
        if max(len(known.said), len(known.labels)) > KNOWN_AT_MOST:
            known.said.clear()
            known.labels.clear()
        return Candidates(ordered, [n for _, n in found], known, messages)

    def vectors(self, count: int, width: int = 0) -> Vectors:
        """The stored vectors of `width` dimensions (default: the embedder's) of the first
        `count` messages: see recall_vectors.held_vectors."""
        assert self.embedder is not None
        return held_vectors(self.state, self.embedder, count, width)

    def read_ahead(self, count: int, *, sittings: bool) -> None:
        """Read what a build of the first `count` messages reads whole once per process,
        before it (RetrievalStrategy.prepare): the stored vectors numpy ranks (not where the
        database ranks them, nor an endpoint's whose size its first answer tells), and,
        with `sittings`, where the sittings start. Only the caches on the state change."""
        if sittings:
            self.sittings()
        if self.embedder is None or not count:
            return
        width = self.embedder.dimensions
        vectors = self.state.store.vectors
        if width and not (vectors.ranks_vectors and count >= DATABASE_RANKING_FROM):
            self.vectors(count, width)

    def dense(self, count: int, query: str, also: Callable[[], Sequence[int]]) -> Dense:
        """Meaning scores for `query` of the first `count` messages.

        Where the database ranks vectors (pgvector), only its nearest candidates
        and the positions `also()` gives (the words' candidates) are read and scored,
        exactly as numpy scores them. Up to the pool's size (POOL messages) that
        is every vector, so both paths rank alike; beyond it the best cosines are
        the same, but dense scores are scaled 0–1 over the candidates rather
        than over every message (the lowest cosine of all would need them all).
        Elsewhere, and below DATABASE_RANKING_FROM messages, every stored vector
        is ranked in numpy (loaded once per process, then extended).
        """
        assert self.embedder is not None
        store, session_id, model = self.state.store, self.state.session_id, self.embedder.key
        if store.vectors.ranks_vectors and count >= DATABASE_RANKING_FROM:
            stored = store.vectors.vector_counts(session_id, model, count)
            if not stored:
                return Dense(None, None, 0)
            asked = self.embedder.embed([query], query=True)[0]
            nearest = store.vectors.nearest_positions(session_id, model, len(asked), count,
                                                      asked.tolist(), POOL)
            if nearest is not None:
                return candidate_dense(self.state, self.embedder, count, asked,
                                       [*nearest, *also()], stored.get(len(asked), 0))
        asked = None
        width = self.embedder.dimensions
        if not width:  # an endpoint's is known from its first answer
            asked = self.embedder.embed([query], query=True)[0]
            width = len(asked)
        found = self.vectors(count, width)
        if not found.count:
            return Dense(None, None, 0)
        if asked is None:
            asked = self.embedder.embed([query], query=True)[0]
        if len(asked) != width:
            return Dense(None, None, 0)  # an embedder whose size is not what it says
        # Every message embedded (the usual case): no mask, so no masked copies of n scores.
        present = None if found.count == len(found.own) else found.present
        return Dense(dense_scores(asked, found.own, present, found.links),
                     present, found.count, rows_of(found.own), asked,
                     lambda vector: dense_scores(vector, found.own, present, found.links))

    def query_vector(self, text: str) -> np.ndarray:
        """`text`'s vector as an input's."""
        assert self.embedder is not None
        return self.embedder.embed([text], query=True)[0]
