"""How `retrieval` ranks earlier messages (chatmem.memory.packing packs the best of them).

Scores, each scaled 0–1 over the candidates so weights mean the same in any
conversation:

  words   BM25 (stemmed English, CJK bigrams), then neighbour smoothing (a
          message next to a strong match gains `smooth` × that match: answers
          sit beside their questions) and a sitting prior (a message gains
          `sitting` × the best score of another message in its sitting — the
          run of messages without a gap of `gap_hours`: talk about one thing
          clusters in time). No model needed.
  dense   cosine similarity of the input's vector with each message's vector,
          plus those with its two context vectors (its vector summed with the
          previous message's, and with the next one's: derived, not embedded).
  fused   (1 − dense_weight) × words + dense_weight × dense in `hybrid` mode;
          words alone in `bm25`, dense alone in `dense`. A message not embedded
          yet (its vector is computed between turns) is ranked by its words
          score alone, in the same ranking.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem.memory.packing import POOL
from chatmem.memory.reasons import RecallRoute

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Sittings:
    """Where a conversation's sittings start: sorted message positions (1 is the first).

    A message belongs to the sitting of the last start at or before it; the
    sitting runs to the message before the next start.
    """

    starts: Sequence[int]

    def of(self, position: int) -> int:
        """The index of `position`'s sitting (0 for a message before the first start)."""
        return bisect.bisect_right(self.starts, position)

    def span(self, number: int, count: int) -> tuple[int, int]:
        """First and last position of sitting `number`, within the first `count` messages."""
        first = self.starts[number - 1] if number > 0 else 1
        last = self.starts[number] - 1 if number < len(self.starts) else count
        return first, min(last, count)


@dataclass(frozen=True)
class Weights:
    mode: str = "hybrid"
    dense_weight: float = 0.5
    smooth: float = 0.5
    sitting: float = 0.3
    mmr: float = 0.6


class WordScores:
    """Model-free scores (0–1) of the first `count` messages, kept sparse.

    `positions` (sorted) and `values` hold the matches and their neighbours;
    every other message of a sitting listed in `spans` scores that sitting's
    prior; all else is 0. So the cost is numpy's and follows the matches (and a
    mask as long as the history): a question of common words matches hundreds of messages.
    """

    def __init__(self, count: int, positions: np.ndarray | None = None,
                 values: np.ndarray | None = None,
                 spans: list[tuple[int, int, float]] | None = None) -> None:
        import numpy as np

        self.count = count
        self.positions: np.ndarray = (np.zeros(0, np.int64) if positions is None
                                      else positions)
        self.values: np.ndarray = np.zeros(0, np.float64) if values is None else values
        self.spans: list[tuple[int, int, float]] = spans or []
        """(first, last, score): the positions of a sitting and what its other messages
        score; never overlapping, in order."""

    @property
    def explicit(self) -> dict[int, float]:
        """The scores held one by one (position → score)."""
        return dict(zip(self.positions.tolist(), self.values.tolist(), strict=True))

    def at(self, position: int) -> float:
        return float(self.at_many([position])[0])

    def at_many(self, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        """The scores of `positions` (float64)."""
        import numpy as np

        wanted = np.asarray(positions, dtype=np.int64)
        found = np.zeros(len(wanted), np.float64)
        if self.spans:
            firsts = np.array([a for a, _, _ in self.spans], np.int64)
            lasts = np.array([b for _, b, _ in self.spans], np.int64)
            priors = np.array([v for _, _, v in self.spans], np.float64)
            i = np.searchsorted(firsts, wanted, side="right") - 1
            inside = (i >= 0) & (wanted <= lasts[np.maximum(i, 0)])
            found[inside] = priors[i[inside]]
        if len(self.positions):
            i = np.minimum(np.searchsorted(self.positions, wanted), len(self.positions) - 1)
            held = self.positions[i] == wanted
            found[held] = self.values[i[held]]
        return found

    def raise_by(self, positions: Iterable[int], amount: float) -> None:
        """Each of `positions` (within the count) scores `amount` more, held one by one."""
        import numpy as np

        raised = distinct(np.fromiter(positions, np.int64))
        if not len(raised):
            return
        higher = self.at_many(raised) + amount
        kept = ~np.isin(self.positions, raised)
        merged = np.concatenate([self.positions[kept], raised])
        order = np.argsort(merged, kind="stable")
        self.positions = merged[order]
        self.values = np.concatenate([self.values[kept], higher])[order]

    def array(self) -> np.ndarray:
        """Every candidate's score, by position − 1 (for fusing with dense scores)."""
        import numpy as np

        scores = np.zeros(self.count, dtype=np.float32)
        for first, last, score in self.spans:
            scores[first - 1 : last] = score
        scores[self.positions - 1] = self.values
        return scores

    def best(self, size: int = POOL) -> list[int]:
        """Positions of the best-scored candidates (score > 0), best first, later first
        among equals — what `pool` gives over `array()`, without building it."""
        import numpy as np

        positive = self.values > 0
        positions, scores = [self.positions[positive]], [self.values[positive]]
        taken = 0
        # Within a span every other message scores alike: the latest come first.
        for first, last, score in sorted(self.spans, key=lambda s: (-s[2], -s[0])):
            if taken >= size:
                break
            # The latest `size - taken` of the span not held one by one: a window that
            # many longer than the held positions inside it holds them.
            lo, hi = np.searchsorted(self.positions, [first, last + 1])
            window = np.arange(last, max(first, last - (size - taken) - (hi - lo)) - 1, -1)
            window = window[~np.isin(window, self.positions[lo:hi])][: size - taken]
            positions.append(window)
            scores.append(np.full(len(window), score))
            taken += len(window)
        every, scored = np.concatenate(positions), np.concatenate(scores)
        order = np.lexsort((-every, -scored))[:size]
        return [int(p) for p in every[order]]


def words_scores(
    bm25: Mapping[int, float], count: int, sittings: Sittings | None, *, smooth: float,
    sitting: float, ceiling: float = 0.0,
) -> WordScores:
    """The model-free score of each of the first `count` messages, from BM25 by position.

    BM25 is scaled by what the query could score (`ceiling`, WordMatches.ceiling)
    or the best match, whichever is higher: a match of one common word of the
    question stays weak even when nothing matches better, so fused with meaning
    it does not count as much as a message that says what was asked. After
    smoothing and the sitting prior, scores are scaled down to 0–1 only where
    they went past 1 (never up)."""
    import numpy as np

    matched = np.fromiter(bm25.keys(), np.int64, len(bm25))
    raw = np.fromiter(bm25.values(), np.float64, len(bm25))
    within = (matched >= 1) & (matched <= count) & (raw > 0)
    if not within.any():
        return WordScores(count)
    matched, raw = matched[within], raw[within]
    # By position (0 and count + 1 are never matched): a mask and a lookup as long as the
    # history, not sorting the matches' neighbours and three searches of them — 15 against
    # 114 µs for 400 matches in 2,000 messages, 61 against 132 µs in 200,000.
    scaled = np.zeros(count + 2, np.float64)
    scaled[matched] = raw / max(float(raw.max()), ceiling)
    # The matches and their neighbours, each with its best neighbour's share.
    near = np.zeros(count + 2, np.bool_)
    near[matched - 1] = near[matched] = near[matched + 1] = True
    near[0] = near[count + 1] = False
    positions = np.flatnonzero(near)
    smoothed = scaled[positions] + smooth * np.maximum(scaled[positions - 1],
                                                       scaled[positions + 1])
    values = smoothed.copy()
    spans: list[tuple[int, int, float]] = []
    if sitting and sittings is not None:
        starts = np.asarray(sittings.starts, dtype=np.int64)
        # Sitting numbers as Sittings.of gives them; positions are sorted, so each
        # sitting's positions are a run of them.
        number = np.searchsorted(starts, positions, side="right")
        # np.concatenate, not np.r_ (Python indexing code): 2 against 5-9 µs a use.
        runs = np.flatnonzero(np.concatenate(([True], number[1:] != number[:-1])))
        sizes = np.diff(np.concatenate((runs, [len(positions)])))
        member = np.repeat(np.arange(len(runs)), sizes)
        best = np.maximum.reduceat(smoothed, runs)
        # The best message of a sitting: the best score, the earliest of equals; it
        # borrows the runner-up's score (the best one's again, if two score it).
        index = np.arange(len(positions))
        top = np.minimum.reduceat(np.where(smoothed == best[member], index, len(index)),
                                  runs)
        others = smoothed.copy()
        others[top] = -np.inf
        second = np.maximum.reduceat(others, runs)
        second[sizes == 1] = 0.0
        lent = np.where(index == top[member], second[member], best[member])
        scored = best[member] > 0
        values[scored] += sitting * lent[scored]
        # The rest of each sitting scores its prior, as one span.
        numbers = number[runs]
        # np.where reads both sides: with no sitting start at all, neither can index.
        ends = np.concatenate((starts, [count + 1]))
        firsts = np.where(numbers > 0, ends[np.maximum(numbers - 1, 0)], 1)
        lasts = np.where(numbers < len(starts), ends[numbers] - 1, count)
        lasts = np.minimum(lasts, count)
        spread = (best > 0) & (lasts - firsts + 1 > sizes)
        spans = [(int(a), int(b), sitting * float(v)) for a, b, v in
                 zip(firsts[spread], lasts[spread], best[spread], strict=True)]
    peak = max([float(values.max()), *(s for _, _, s in spans)])
    scale = peak if peak > 1 or (peak > 0 and not ceiling) else 1.0
    return WordScores(count, positions, values / scale,
                      sorted((a, b, s / scale) for a, b, s in spans))


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-D integer array, sorted: np.unique's, without it. numpy
    2's np.unique asks numpy.ma whether the array is masked, and numpy.ma's import (its
    first use in a process: 16-19 ms of CPU on a loaded 2-core machine, bytecode cached)
    fell in every process's first retrieval build; chatmem uses numpy.ma nowhere else."""
    import numpy as np

    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def similarities(rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """rows · vector over every message's vector, without BLAS: a threaded BLAS
    matrix-vector product spins on a busy 2-core machine (24 ms for 20,000 × 384 here,
    against 1 ms for this loop). The few hundred rows of `pack`'s pool are another
    matter: there BLAS takes a third of this loop's time (3.6 against 10.5 µs for
    208 × 256, CPU time equal to wall time)."""
    import numpy as np

    return np.einsum("ij,j->i", rows, vector)


def links(vectors: np.ndarray) -> np.ndarray:
    """Each row's dot product with the row before it (0 for the first): what the
    context cosines of `dense_scores` need besides the query's, kept per session
    (chatmem.memory.recall_sources) so a build does not recompute it."""
    import numpy as np

    found = np.zeros(len(vectors), dtype=np.float32)
    if len(vectors) > 1:
        found[1:] = np.einsum("ij,ij->i", vectors[1:], vectors[:-1])
    return found


def dense_scores(query: np.ndarray, vectors: np.ndarray, present: np.ndarray | None = None,
                 linked: np.ndarray | None = None) -> np.ndarray:
    """Meaning, scaled 0–1 over the candidates that have a vector (`present`; None: all);
    0 for the others.

    A message's cosine with the query, plus those of its two context vectors: the
    normalized sum of its vector and the previous message's, and of its vector and
    the next one's, both derived from the vectors (`linked`: `links(vectors)`)
    rather than embedded, so each message is embedded once. Summed, not the larger:
    a message close to the question and said in a close exchange outranks one that
    is only one of these (measured on the development set, benchmarks/recall.py
    --dev: the sum 0.809 → 0.832 at 2,000 tokens against the larger; the derived
    context vectors, the next one added, 0.835 against the previous message and
    this one embedded together, at a third of the embedding work)."""
    import numpy as np

    if not len(vectors):
        return np.zeros(0, dtype=np.float32)
    if linked is None:
        linked = links(vectors)
    own = similarities(vectors, query)
    # A row without a vector is zero, a stored one unit: its square is 0 or 1.
    square = np.ones(len(vectors), np.float32) if present is None else present.astype(
        np.float32)
    zero = np.zeros(1, np.float32)
    before, after = np.concatenate([zero, own[:-1]]), np.concatenate([own[1:], zero])
    square_before = np.concatenate([zero, square[:-1]])
    square_after = np.concatenate([square[1:], zero])
    link_after = np.concatenate([linked[1:], zero])
    raw = meaning(own, before, after, square, square_before, square_after, linked,
                  link_after)
    return scaled(raw, present)


def meaning(own: np.ndarray, before: np.ndarray, after: np.ndarray, square: np.ndarray,
            square_before: np.ndarray, square_after: np.ndarray, link_before: np.ndarray,
            link_after: np.ndarray) -> np.ndarray:
    """Cosines with the query of each message's vector (`own`) and of its two context
    vectors, summed, from the cosines of its neighbours (`before`, `after`: 0 where
    there is none), the squared lengths of the three vectors (1, or 0 for none) and
    their dot products with the message's (`link_before`, `link_after`):
    |a + b|² = |a|² + |b|² + 2a·b, so no context vector is ever built."""
    import numpy as np

    def length(extra: np.ndarray, link: np.ndarray) -> np.ndarray:
        return np.sqrt(np.maximum(square + extra + 2 * link, 1e-12))

    return (own + (own + before) / length(square_before, link_before)
            + (own + after) / length(square_after, link_after)).astype(np.float32)


def scaled(raw: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
    """`raw` scaled 0–1 over the rows `present` marks (None: all); 0 for the others."""
    import numpy as np

    scored = raw if present is None else raw[present]
    if not len(scored):
        return np.zeros(len(raw), dtype=np.float32)
    low, high = float(scored.min()), float(scored.max())
    out = np.ones_like(raw) if high - low < 1e-9 else (raw - low) / (high - low)
    return out if present is None else np.where(present, out, 0).astype(np.float32)


def fuse(lexical: np.ndarray, dense: np.ndarray | None, weights: Weights,
         present: np.ndarray | None = None) -> np.ndarray:
    """The fused score of each candidate; one without a vector (`present` false) keeps
    its words score."""
    import numpy as np

    if dense is None or weights.mode == "bm25":
        return lexical
    fused: np.ndarray = dense.astype(np.float32) if weights.mode == "dense" else (
        (1 - weights.dense_weight) * lexical + weights.dense_weight * dense)
    return fused if present is None else np.where(present, fused, lexical)


def route_of(bm25: float, words: float, dense: float | None, weights: Weights,
             dated: bool = False, beside: bool = True) -> RecallRoute:
    """What brought a candidate up: meaning when its share of the fused score is the
    larger, else its own words, else the time the input names, else the match it is
    `beside` (next to it), else its sitting's match."""
    if dense is not None and weights.mode != "bm25":
        meaning = dense if weights.mode == "dense" else weights.dense_weight * dense
        if weights.mode == "dense" or meaning > (1 - weights.dense_weight) * words:
            return RecallRoute.MEANING
    if bm25 > 0:
        return RecallRoute.WORDS
    if dated:
        return RecallRoute.TIME
    return RecallRoute.NEIGHBOUR if beside else RecallRoute.SITTING
