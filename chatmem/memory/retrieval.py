"""`retrieval`: the earlier messages most relevant to the input, within a budget, + recent turns.

Like VectorStoreRetrieverMemory, but budgeted and inspectable. Every earlier
message is a candidate; they are ranked by words (BM25 over the full-text
index, stemmed, CJK as bigrams, smoothed over neighbours and sittings) and,
when an embedder is configured, by meaning (each message's vector and those of
its exchanges with its neighbours), fused, then packed best first into what
the budget leaves after the system prompt, the input and the recent turns,
with MMR keeping near-duplicates out. Recalled messages go out in
conversation order, labelled; `inspect` shows each candidate's scores and why
it was kept or dropped. See chatmem.memory.ranking for the scores.

Without an embedder, `hybrid` and `dense` fall back to the model-free
ranking, and say so once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, tzinfo
from operator import attrgetter
from typing import TYPE_CHECKING

from chatmem.context_warnings import ContextWarning, EmbeddingFailed
from chatmem.embeddings.base import load
from chatmem.errors import ChatmemError, EmbedderFailed
from chatmem.memory import (
    later_mentions,
    recall_days,
    speaker_prior,
    time_words,
    unnamed_meaning,
)
from chatmem.memory.assembly import (
    assemble,
    dropped_turns,
    fixed_tokens,
    history_part,
    newest_turns,
)
from chatmem.memory.base import BaseStrategy, ContextRequest, MemoryEnv, Opening
from chatmem.memory.context import Context, Message, Part, said_line
from chatmem.memory.day_stamps import opens_with_day
from chatmem.memory.packing import POOL, Ranked, as_json, pack, pool, pool_size
from chatmem.memory.params import param
from chatmem.memory.ranking import Weights, WordScores, fuse, route_of, words_scores
from chatmem.memory.reasons import (
    DroppedTurns,
    NewestTurns,
    Recalled,
    RecallMethod,
    RecallRoute,
    turn_run,
)
from chatmem.memory.recall_opening import open_with_user
from chatmem.memory.recall_sources import Candidates, StoredRecall
from chatmem.notices import NoEmbedder, Notice

if TYPE_CHECKING:
    from chatmem.embeddings import Embedder
    from chatmem.memory.time_spans import TimeSpan

MODES = ("hybrid", "bm25", "dense")
SHOWN_DROPPED = 10
"""Dropped candidates kept with the context for `inspect` (the best-ranked ones)."""


def said(message: Message, day: date | None, tokens: int) -> Message:
    """`message` as recall sends it: below the line naming `day` (an earlier one), if any."""
    return message if day is None else replace(message, said_on=day, tokens=tokens)


@dataclass(frozen=True)
class RetrievalParams:
    max_tokens: int = param(2000, "budget for the whole context", minimum=1)
    # One: the turn before it is recalled when it bears on the input, and otherwise leaves
    # its tokens to what does (benchmarks/recall.py --dev, id recall at 1,000 / 2,000 /
    # 4,000 tokens: recent=2 0.731 / 0.835 / 0.896, recent=1 0.741 / 0.841 / 0.896).
    recent: int = param(1, "how many recent turns to always send (older ones compete with "
                        "the recalled for the budget)", minimum=0)
    mode: str = param("hybrid", "rank by bm25 (words), dense (meaning) or hybrid (both)",
                      choices=MODES)
    dense_weight: float = param(0.5, "share of meaning in hybrid scores", minimum=0,
                                maximum=1)
    smooth: float = param(0.5, "how much of its best neighbour's word score a message "
                          "borrows (0: none), so the reply next to a match is recalled with it",
                          minimum=0)
    sitting: float = param(0.3, "how much of the best word score in its sitting (messages "
                           "with no pause of gap_hours between them) a message borrows "
                           "(0: none)", minimum=0)
    gap_hours: float = param(4.0, "a pause this long (hours) ends a sitting", minimum=0)
    # 0.6 (benchmarks/recall.py --dev, recent=1; id recall at 2,000 tokens, λ 0.5 / 0.6 /
    # 0.7 / 0.8: 0.838 / 0.845 / 0.841 / 0.835 on the development set; synthetic 0.946 /
    # 0.938 / 0.866 at 0.5 / 0.6 / 0.7: derived context vectors made near-duplicates rank
    # alike, and a little more diversity wins back what they cost there).
    mmr: float = param(0.6, "MMR λ: 1 ranks by relevance alone; lower prefers messages "
                       "unlike those already recalled", minimum=0, maximum=1)
    top_k: int = param(0, "recall at most this many messages (0: as many as fit)", minimum=0)
    time_weight: float = param(0.5, "how much a message dated within a time the input "
                               "names (`last May`, `three weeks ago`, `上个月`) gains, as a "
                               "share of a full word match (0: none)", minimum=0)
    # On: "next Friday" recalled days later names no day without it. Off, the lines' tokens
    # go to more messages (benchmarks/recall.py --dev, id recall at 2,000 tokens: 0.845 on,
    # 0.848 off; its messages carry their dates in their text, as real chats do not).
    dates: bool = param(True, "name the day above recalled messages said on an earlier day "
                        "(about 9 tokens a day)")
    # 0.1 (benchmarks/recall.py --dev, id recall at 1,000 / 2,000 / 4,000 tokens: 0 0.738 /
    # 0.845 / 0.900, 0.05 0.751 / 0.848 / 0.909, 0.1 0.773 / 0.858 / 0.916, 0.15 0.770 /
    # 0.851 / 0.919; chatmem.memory.speaker_prior says why).
    speaker: float = param(0.1, "how much a message gains when the input names its speaker "
                           "(the label it opens with, `alice: …`), as a share of a full "
                           "match (0: none)", minimum=0)
    # 0.5 (benchmarks/recall.py --dev, id recall at 1,000 / 2,000 / 4,000 tokens: 0 0.783 /
    # 0.861 / 0.919, 0.3 0.796 / 0.871 / 0.935, 0.5 0.803 / 0.871 / 0.932, 0.7 0.790 /
    # 0.864 / 0.935; the synthetic set, without labels, unchanged; chatmem.memory.
    # unnamed_meaning says why).
    unnamed: float = param(0.5, "share of the input's meaning read with the speakers it names "
                           "put as `they` (0: none)", minimum=0, maximum=1)
    later: int = param(1, "how many of the best recalled user messages bring the user's "
                       "latest later message holding their rarest words, which may correct "
                       "them (0: none)", minimum=0)


class RetrievalStrategy(BaseStrategy[RetrievalParams]):
    name = "retrieval"
    description = ("Recall the earlier messages most relevant to the input (words + meaning)"
                   " into max_tokens, + recent turns.")
    OPTIONS = RetrievalParams
    in_default_eval = True
    recalls_words = True

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._told_no_embedder = False

    @property
    def needs_embedder(self) -> bool:
        return self.options.mode != "bm25"

    def budget(self, request: ContextRequest) -> int | None:
        return self.options.max_tokens

    def weights(self, embedder: Embedder | None) -> Weights:
        options = self.options
        mode = options.mode if embedder is not None else "bm25"
        return Weights(mode, options.dense_weight, options.smooth, options.sitting, options.mmr)

    def source(self, request: ContextRequest) -> StoredRecall:
        embedder = request.embedder if self.needs_embedder else None
        return StoredRecall(request.state, request.counter, self.options.gap_hours, embedder,
                            request.said_at, request.zone)

    def prepare(self, opening: Opening) -> None:
        # What the first build reads whole (every stored vector: ~45% of a process's first
        # turn at 1,000 turns), read before the first message; later builds read what is new.
        embedder = opening.embedder if self.needs_embedder else None
        words = (self.options.mode != "dense" or embedder is None) and bool(self.options.sitting)
        if embedder is None and not words:
            return
        source = StoredRecall(opening.state, opening.counter, self.options.gap_hours, embedder)
        count = source.count_before(opening.history.turn_count() + 1)
        source.read_ahead(count, sittings=words)
        if embedder is not None:
            load(embedder)  # the bundled e5's weights: the first query would read them

    def build(self, request: ContextRequest) -> Context:
        budget, recent = self.options.max_tokens, self.options.recent
        if request.cap is not None:
            budget = min(budget, request.cap)
        room = max(budget - fixed_tokens(request), 0)
        turns = newest_turns(request, room, recent)
        total = request.history.turn_count()
        first_recent = turns[0].number if turns else total + 1
        room -= sum(t.tokens for t in turns)
        parts: list[Part | None] = []
        recall_rows: list[dict[str, object]] = []
        warnings: list[ContextWarning] = []
        if first_recent > 1 and room > 0:
            recalled, recall_rows = self.recall(request, first_recent, room, warnings)
            parts.append(recalled)
        dropped = dropped_turns(total, turns)
        kept_count = len([r for r in recall_rows if r["kept"]]) if dropped else 0
        reason = NewestTurns(self.name, "recent", recent, turn_run([t.number for t in turns]),
                             dropped, recalled=kept_count)
        parts.append(history_part(turns, reason))
        notes = [DroppedTurns(dropped, recalled_messages=kept_count)] if dropped else []
        return assemble(request, parts, budget=budget, dropped=notes, warnings=warnings,
                        recall=recall_rows)

    def recall(
        self, request: ContextRequest, first_recent: int, room: int,
        warnings: list[ContextWarning],
    ) -> tuple[Part | None, list[dict[str, object]]]:
        """The recalled part, and the rows `inspect` shows."""
        source = self.source(request)
        embedder = request.embedder if self.needs_embedder else None
        no_embedder = self.needs_embedder and embedder is None
        embedding_error: str | None = None
        failed_embedder: str | None = None
        count = source.count_before(first_recent)
        query = request.query  # not the asker's own label: it would find all they said
        weights = self.weights(embedder)

        named, searched = self._named_time(source, query, request.zone)

        def ranked_by_words() -> tuple[dict[int, float], WordScores]:
            matches = source.bm25(searched, first_recent)
            bm25 = matches.scores
            sittings = source.sittings() if weights.sitting and bm25 else None
            return bm25, words_scores(bm25, count, sittings, smooth=weights.smooth,
                                      sitting=weights.sitting, ceiling=matches.ceiling)

        bm25, words = ranked_by_words() if weights.mode != "dense" else ({}, WordScores(count))
        dated = self._prefer_named_time(source, named, count, words)
        dense = rows = fused = present = found = None
        embedded = count
        if embedder is not None:
            try:
                # The words' candidates only where the database ranks vectors: sorting
                # them is a good share of a build where numpy ranks every vector anyway.
                found = source.dense(count, query, words.best)
                embedded = found.embedded
                if found.scores is not None:
                    dense, present, rows = found.scores, found.present, found.rows
            except ChatmemError as e:
                embedding_error = str(e)
                failed_embedder = e.name if isinstance(e, EmbedderFailed) else None
                warnings.append(EmbeddingFailed(str(e), failed_embedder))
                weights = replace(weights, mode="bm25")
                embedder = dense = rows = present = None
                embedded = count
            if embedded < count and weights.mode == "dense":
                # Messages without a vector yet are ranked by their words, dated ones
                # raised as above (the fresh scores would otherwise lose it).
                bm25, words = ranked_by_words()
                words.raise_by(dated, self.options.time_weight)
        size = pool_size(room)
        if dense is None:
            # Words alone: the best candidates straight from the sparse scores.
            best = words.best(size)
        else:
            fused = fuse(words.array(), dense, weights, present)
            best = [i + 1 for i in pool(fused, size)]
        candidates = source.candidates(best)
        in_pool: list[Ranked] | None = None
        unnamed: tuple[str, ...] = ()
        if dense is not None and found is not None and self.options.unnamed:
            # The speakers the input names are known from the pool's labels.
            in_pool = candidates.ranked(words, bm25, dense, present, fused)
            again = unnamed_meaning.reread(in_pool, query, request.speaker, found, source,
                                           self.options.unnamed)
            if again is not None:
                dense, unnamed = again.scores, again.names
                fused = fuse(words.array(), dense, weights, present)
                candidates = source.candidates([i + 1 for i in pool(fused, size)])
                in_pool = None
        # A position with no message is a replaced turn's (/retry): smoothing and fusion
        # score positions, and its messages are out of memory.
        best = candidates.positions
        index = {position: i for i, position in enumerate(best)}
        others: dict[int, Candidates] = {}

        def outside(position: int) -> Candidates:
            # A message the pool left out (the question of a recalled reply), read alone.
            if position not in others:
                others[position] = source.candidates([position])
            return others[position]

        def message_at(position: int) -> Message:
            if position in index:
                return candidates.message(index[position])
            return outside(position).message(0)

        def ranked_at(position: int) -> Ranked:
            return outside(position).ranked(words, bm25, dense, present, fused)[0]

        if in_pool is None:
            in_pool = candidates.ranked(words, bm25, dense, present, fused)
        ranked = speaker_prior.prefer_named(in_pool, query,
                                            self.options.speaker, asker=request.speaker)
        day_at, line = (self._earlier_days(source, ranked, request)
                        if self.options.dates else (lambda position: None, 0))
        pack(ranked, room, mmr=weights.mmr,
             vectors=None if rows is None else rows([r.position for r in ranked]),
             limit=self.options.top_k, days=[day_at(r.position) for r in ranked], line=line)
        kept = sorted([r for r in ranked if r.kept], key=attrgetter("position"))

        def lines(messages: list[Ranked]) -> int:  # a message stamped with its day needs none
            return line * len({d for r in messages if (d := day_at(r.position)) is not None
                               and not opens_with_day(r.text, d)})

        # A message added after packing pays its day's line too, or the best made room for it.
        kept = open_with_user(kept, ranked, ranked_at, room - lines(kept))
        if self.options.later:
            lookup = later_mentions.Lookup(
                lambda text: source.rare_matches(text, first_recent, later_mentions.RARE),
                lambda position: message_at(position).content, ranked_at)
            kept = later_mentions.pull_in(kept, ranked, lookup, room, self.options.top_k,
                                          sources=self.options.later, lines=lines)
        kept, days, said_at = (recall_days.with_days(source, kept, message_at, room, request.zone)
                               if self.options.dates else (kept, {}, None))
        shown = [*kept, *[r for r in ranked if not r.kept][:SHOWN_DROPPED]]
        for r in shown:
            # What brought a candidate up is worked out for those shown (the kept
            # among them), not for every candidate of the pool.
            if r.route is None:
                # Two lookups, not a generator resumed for each: ~70 rows a build.
                before, after = r.position - 1, r.position + 1
                beside = bool(weights.smooth) and (
                    (1 <= before <= count and bm25.get(before, 0.0) > 0)
                    or (1 <= after <= count and bm25.get(after, 0.0) > 0))
                r.route = route_of(r.bm25, r.words, r.dense, weights, r.position in dated,
                                   beside)
        method = RecallMethod(weights.mode, weights.dense_weight, weights.smooth,
                              weights.sitting, weights.mmr, no_embedder, embedding_error,
                              failed_embedder)
        if not kept:
            return None, as_json(shown, self.options.top_k)
        best_by_turn: dict[int, float] = {}
        for r in kept:
            best_by_turn[r.turn] = max(r.fused, best_by_turn.get(r.turn, 0.0))
        # The pool's messages in one call, not three a kept one (some sixty a build).
        pooled = iter(candidates.messages_of([index[r.position] for r in kept
                                              if r.position in index]))
        sending: list[Message] = []
        for r in kept:
            message = next(pooled) if r.position in index else message_at(r.position)
            day = days.get(r.position)
            sending.append(message if day is None else said(message, day, r.tokens))
        sent = tuple(sending)
        # Counted by list.count, whose comparisons start with identity: a Counter hashes
        # each kept message's route by Enum.__hash__, a Python call (~70 a build).
        routes = [r.route for r in kept]
        # In a combination the budget recall fills is the shared one, which it names.
        budget = self.options.max_tokens if request.cap is None else min(
            self.options.max_tokens, request.cap)
        reason = Recalled(method, budget, len(kept), count, len(best_by_turn),
                          min([r.fused for r in kept]), max([r.fused for r in kept]),
                          left=len(ranked) - len(kept),
                          embedded=embedded if embedded < count else None,
                          by_words=routes.count(RecallRoute.WORDS),
                          by_meaning=routes.count(RecallRoute.MEANING),
                          by_neighbour=routes.count(RecallRoute.NEIGHBOUR),
                          by_time=routes.count(RecallRoute.TIME),
                          by_sitting=routes.count(RecallRoute.SITTING),
                          by_later=routes.count(RecallRoute.LATER),
                          times_named=tuple(span.days for span in named), unnamed=unnamed,
                          shared=request.cap is not None, dated=len(days))
        part = Part("recalled", sent, reason, scores=tuple(sorted(best_by_turn.items())),
                    said=said_at)
        return part, as_json(shown, self.options.top_k)

    def _named_time(self, source: StoredRecall, query: str,
                    zone: tzinfo) -> tuple[list[TimeSpan], str]:
        """The spans of time the input names (none with `time_weight` 0), and the input
        to search by words: without the words that named them, which the time's own
        preference stands for (searched, the 4 of `May 4` matched every list's item 4).
        Read on the clock of when the input is said (`source.now`), in the user's `zone`."""
        if not self.options.time_weight or not time_words.may_name_time(query):
            return [], query
        now = source.now()
        return time_words.read(query, now.astimezone(zone)) if now is not None else ([], query)

    def _prefer_named_time(self, source: StoredRecall, named: list[TimeSpan], count: int,
                           words: WordScores) -> set[int]:
        """Messages dated within a time the input names gain `time_weight` in `words`
        (the latest POOL of them): their positions."""
        within: set[int] = set()
        for span in named:
            first = source.first_at_or_after(span.start, count)
            end = source.first_at_or_after(span.end, count)
            within.update(range(max(first, end - POOL), end))
        words.raise_by(within, self.options.time_weight)
        return within

    @staticmethod
    def _earlier_days(source: StoredRecall, ranked: list[Ranked], request: ContextRequest,
                      ) -> tuple[Callable[[int], date | None], int]:
        """The day a position's message was said if before the input's (else None), in the
        user's zone, and a day's line's tokens: packing counts the lines as they are sent
        (counted after it, they took the least relevant's room and what it left stayed unused)."""
        said = source.now() if ranked else None
        if said is None:
            return lambda position: None, 0
        today = said.astimezone(request.zone).date()
        days = recall_days.EarlierDays(source.days_at, today)
        days.fill([r.position for r in ranked])
        # A dict's own lookup: asked ~250 times a build, a position known costs no call.
        day_at = days.__getitem__
        return day_at, request.counter.count_text(f"{said_line(today)}\n")

    def update(self, env: MemoryEnv) -> list[Notice]:
        # Vectors are the engine's to compute after a commit (chatmem.memory.vector_backlog).
        if not self.needs_embedder or env.embedder is not None or self._told_no_embedder:
            return []
        self._told_no_embedder = True
        return [NoEmbedder(self.name)]
