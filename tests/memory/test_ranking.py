"""The ranking pieces: smoothing, the sitting prior, fusion, MMR and packing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatmem.memory.ranking import Ranked, Timeline, Weights, fuse, pack, pool, words_scores
from chatmem.memory.recall_index import sittings_of


def timeline(sittings: list[int]) -> Timeline:
    out = Timeline()
    for i, sitting in enumerate(sittings):
        out.append(100 + i, i // 2 + 1, "user" if i % 2 == 0 else "assistant", sitting)
    return out


def test_a_neighbour_of_a_match_gains_smooth_times_the_match() -> None:
    line = timeline([1, 2, 3, 4, 5])  # every message its own sitting: no prior
    scores = words_scores(line, 5, {102: 4.0}, smooth=0.5, sitting=0.3)
    assert scores.tolist() == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.0])


def test_a_message_gains_sitting_times_the_best_other_score_in_its_sitting() -> None:
    line = timeline([1, 1, 1, 1, 2, 2])
    scores = words_scores(line, 6, {100: 2.0}, smooth=0.0, sitting=0.3)
    assert scores.tolist() == pytest.approx([1.0, 0.3, 0.3, 0.3, 0.0, 0.0])


def test_the_best_message_of_a_sitting_gains_from_the_runner_up_only() -> None:
    line = timeline([1, 1, 1])
    scores = words_scores(line, 3, {100: 2.0, 102: 1.0}, smooth=0.0, sitting=0.5)
    # 100: 1.0 + 0.5 × 0.5; 101: 0 + 0.5 × 1.0; 102: 0.5 + 0.5 × 1.0; scaled by the top.
    assert scores.tolist() == pytest.approx([1.0, 0.4, 0.8])


def test_candidates_past_the_count_are_never_scored() -> None:
    line = timeline([1, 1, 1, 1])
    assert not words_scores(line, 2, {103: 5.0}, smooth=0.5, sitting=0.3).any()


def test_sittings_break_at_gaps_and_at_unreadable_times() -> None:
    times = ["2026-01-05T08:00:00+00:00", "2026-01-05T09:00:00+00:00",
             "2026-01-05T14:00:00+00:00", "not a time", "2026-01-05T14:10:00Z"]
    numbers, _ = sittings_of(times, 4.0)
    assert numbers == [1, 1, 2, 3, 4]


def test_fusion_weights_words_and_meaning() -> None:
    dense = np.array([0.0, 1.0, 0.5], dtype=np.float32)
    words = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    assert fuse(3, words, dense, Weights("hybrid", 0.5)).tolist() == [0.5, 0.5, 0.25]
    assert fuse(3, words, dense, Weights("bm25")).tolist() == [1.0, 0.0, 0.0]
    assert fuse(3, words, dense, Weights("dense")).tolist() == [0.0, 1.0, 0.5]
    assert fuse(3, words, None, Weights("hybrid")).tolist() == [1.0, 0.0, 0.0]


def ranked(scores: list[float], tokens: list[int]) -> list[Ranked]:
    return [Ranked(i, i, "user", 0.0, s, None, s, t) for i, (s, t) in
            enumerate(zip(scores, tokens, strict=True))]


def test_packing_skips_what_does_not_fit_and_fills_with_smaller_ones() -> None:
    items = ranked([0.9, 0.8, 0.7, 0.6], [50, 200, 60, 500])
    pack(items, 120, mmr=1.0, vectors=None)
    assert [r.kept for r in items] == [True, False, True, False]
    assert items[1].why == "budget: does not fit"
    assert items[3].why.startswith("budget")


def test_mmr_leaves_out_a_near_duplicate_for_something_different() -> None:
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    plain = ranked([1.0, 0.95, 0.6], [10, 10, 10])
    pack(plain, 20, mmr=1.0, vectors=vectors)
    assert [r.kept for r in plain] == [True, True, False]
    diverse = ranked([1.0, 0.95, 0.6], [10, 10, 10])
    pack(diverse, 20, mmr=0.7, vectors=vectors)
    assert [r.kept for r in diverse] == [True, False, True]
    assert diverse[1].why.startswith("diversity")


@given(st.lists(st.tuples(st.floats(0.01, 1), st.integers(1, 300)), min_size=1, max_size=40),
       st.integers(0, 2000), st.floats(0, 1))
def test_packing_never_exceeds_the_room(items: list[tuple[float, int]], room: int,
                                        mmr: float) -> None:
    rows = ranked([s for s, _ in items], [t for _, t in items])
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(rows), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pack(rows, room, mmr=mmr, vectors=vectors)
    assert sum(r.tokens for r in rows if r.kept) <= room
    assert all(r.why for r in rows)


def test_the_pool_is_best_first_and_later_first_among_equals() -> None:
    assert pool(np.array([0.2, 0.9, 0.0, 0.9, 0.5], dtype=np.float32)) == [3, 1, 4, 0]
