"""The ranking pieces: smoothing, the sitting prior, fusion, MMR and packing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from meter import metered

import chatmem
from chatmem.memory.packing import POOL, Ranked, pack, pool
from chatmem.memory.ranking import (
    Sittings,
    Weights,
    dense_scores,
    distinct,
    fuse,
    words_scores,
)
from chatmem.memory.reasons import RecallVerdict
from chatmem.store import Store


def starts(sittings: list[int]) -> Sittings:
    """Sittings from each message's sitting number (message 1 first)."""
    return Sittings([p for p, n in enumerate(sittings, 1) if p == 1 or sittings[p - 2] != n])


def test_a_neighbour_of_a_match_gains_smooth_times_the_match() -> None:
    scores = words_scores({3: 4.0}, 5, starts([1, 2, 3, 4, 5]), smooth=0.5, sitting=0.3)
    assert scores.array().tolist() == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.0])


def test_a_message_gains_sitting_times_the_best_other_score_in_its_sitting() -> None:
    scores = words_scores({1: 2.0}, 6, starts([1, 1, 1, 1, 2, 2]), smooth=0.0, sitting=0.3)
    assert scores.array().tolist() == pytest.approx([1.0, 0.3, 0.3, 0.3, 0.0, 0.0])
    # Kept sparse: the match, and one span for the rest of its sitting.
    assert scores.explicit == pytest.approx({1: 1.0, 2: 0.3})
    [(first, last, prior)] = scores.spans
    assert (first, last, prior) == (1, 4, pytest.approx(0.3))


def test_the_best_message_of_a_sitting_gains_from_the_runner_up_only() -> None:
    scores = words_scores({1: 2.0, 3: 1.0}, 3, starts([1, 1, 1]), smooth=0.0, sitting=0.5)
    # 1: 1.0 + 0.5 × 0.5; 2: 0 + 0.5 × 1.0; 3: 0.5 + 0.5 × 1.0; scaled by the top.
    assert scores.array().tolist() == pytest.approx([1.0, 0.4, 0.8])


def test_candidates_past_the_count_are_never_scored() -> None:
    scores = words_scores({4: 5.0}, 2, starts([1, 1, 1, 1]), smooth=0.5, sitting=0.3)
    assert not scores.array().any() and scores.best() == []


@given(st.dictionaries(st.integers(1, 60), st.floats(0.1, 9), max_size=12),
       st.lists(st.integers(1, 60), max_size=8), st.integers(1, 60),
       st.sampled_from([0.0, 0.5]), st.sampled_from([0.0, 0.3, 2.0]), st.integers(1, 20))
def test_sparse_scores_rank_exactly_as_the_full_array(
        bm25: dict[int, float], breaks: list[int], count: int, smooth: float, sitting: float,
        size: int) -> None:
    sittings = Sittings(sorted({1, *breaks}))
    scores = words_scores(bm25, count, sittings, smooth=smooth, sitting=sitting)
    full = scores.array()
    assert [scores.at(p) for p in range(1, count + 1)] == pytest.approx(full.tolist())
    best = scores.best(size)
    # The same ranking: the same scores in the same order. Which of two messages whose
    # scores differ only by rounding (9.0 against 8.999999999999998) comes first may differ.
    assert len(best) == len(set(best)) == len(pool(full, size))
    assert [full[p - 1] for p in best] == pytest.approx([full[i] for i in pool(full, size)])


def scores_one_by_one(bm25: dict[int, float], count: int, sittings: Sittings | None,
                      smooth: float, sitting: float, ceiling: float,
                      ) -> tuple[dict[int, float], list[tuple[int, int, float]]]:
    """The words scores as words_scores defines them, message by message in Python (how
    it computed them before numpy did): the held scores and the sittings' spans."""
    raw = {p: s for p, s in bm25.items() if 1 <= p <= count and s > 0}
    if not raw:
        return {}, []
    top = max(max(raw.values()), ceiling)
    scaled = {p: s / top for p, s in raw.items()}
    smoothed: dict[int, float] = {}
    for p in scaled:
        for q in (p - 1, p, p + 1):
            if 1 <= q <= count and q not in smoothed:
                smoothed[q] = scaled.get(q, 0.0) + smooth * max(scaled.get(q - 1, 0.0),
                                                                scaled.get(q + 1, 0.0))
    explicit = dict(smoothed)
    spans = []
    if sitting and sittings is not None:
        members: dict[int, list[int]] = {}
        for p in smoothed:
            members.setdefault(sittings.of(p), []).append(p)
        for number, positions in members.items():
            ordered = sorted((smoothed[p] for p in positions), reverse=True)
            best, second = ordered[0], (ordered[1] if len(ordered) > 1 else 0.0)
            if best <= 0:
                continue
            top_position = max(positions, key=lambda p: (smoothed[p], -p))
            for p in positions:
                explicit[p] += sitting * (second if p == top_position else best)
            first, last = sittings.span(number, count)
            if last - first + 1 > len(positions):
                spans.append((first, last, sitting * best))
    peak = max([*explicit.values(), *(s for _, _, s in spans)])
    scale = peak if peak > 1 or (peak > 0 and not ceiling) else 1.0
    return ({p: v / scale for p, v in explicit.items()},
            sorted((a, b, s / scale) for a, b, s in spans))


@given(st.dictionaries(st.integers(-2, 80), st.floats(-1, 9), max_size=40),
       st.lists(st.integers(1, 80), max_size=12), st.integers(1, 80),
       st.sampled_from([0.0, 0.5, 1.5]), st.sampled_from([0.0, 0.3, 2.0]),
       st.sampled_from([0.0, 3.0, 40.0]), st.booleans())
def test_words_scores_are_the_message_by_message_scores(
        bm25: dict[int, float], breaks: list[int], count: int, smooth: float,
        sitting: float, ceiling: float, with_sittings: bool) -> None:
    # Ties included: equal BM25 scores, a sitting's best scored twice, a sitting of one.
    sittings = Sittings(sorted({1, *breaks})) if with_sittings else None
    scores = words_scores(bm25, count, sittings, smooth=smooth, sitting=sitting,
                          ceiling=ceiling)
    explicit, spans = scores_one_by_one(bm25, count, sittings, smooth, sitting, ceiling)
    assert scores.explicit == explicit
    assert scores.spans == spans


def test_raised_scores_are_held_one_by_one_over_the_spans() -> None:
    scores = words_scores({1: 2.0}, 6, starts([1, 1, 1, 1, 2, 2]), smooth=0.0, sitting=0.3)
    scores.raise_by([3, 1, 6], 0.5)
    assert scores.explicit == pytest.approx({1: 1.5, 2: 0.3, 3: 0.8, 6: 0.5})
    assert scores.array().tolist() == pytest.approx([1.5, 0.3, 0.8, 0.3, 0.0, 0.5])
    assert scores.best(3) == [1, 3, 6]


def test_a_weak_match_stays_weak_when_nothing_matches_better() -> None:
    # One word of a question that could score 8.0: a quarter of it, not all of it.
    scores = words_scores({3: 2.0}, 5, None, smooth=0.0, sitting=0.0, ceiling=8.0)
    assert scores.at(3) == pytest.approx(0.25)
    # Without what the query could score, the best match counts as a full one.
    assert words_scores({3: 2.0}, 5, None, smooth=0.0, sitting=0.0).at(3) == 1.0


@given(st.dictionaries(st.integers(1, 40), st.floats(0.1, 9), min_size=1, max_size=12),
       st.lists(st.integers(1, 40), max_size=6), st.floats(0, 40),
       st.sampled_from([0.0, 0.5]), st.sampled_from([0.0, 0.3, 2.0]))
def test_words_scores_stay_within_0_and_1(bm25: dict[int, float], breaks: list[int],
                                          ceiling: float, smooth: float,
                                          sitting: float) -> None:
    scores = words_scores(bm25, 40, Sittings(sorted({1, *breaks})), smooth=smooth,
                          sitting=sitting, ceiling=ceiling)
    full = scores.array()
    assert full.min() >= 0 and full.max() <= 1 + 1e-6


@given(st.floats(0.1, 9), st.floats(0.1, 9), st.floats(0, 20))
def test_a_weaker_match_never_outranks_a_stronger_one(weak: float, strong: float,
                                                      ceiling: float) -> None:
    weak, strong = sorted((weak, strong))
    # Far apart, in sittings of their own: only their own words count.
    scores = words_scores({2: weak, 20: strong}, 30, Sittings([1, 10, 19, 25]), smooth=0.5,
                          sitting=0.3, ceiling=ceiling)
    assert scores.at(2) <= scores.at(20)
    assert scores.at(20) <= 1 + 1e-6


@pytest.mark.parametrize("question, partial", [
    ("hatchback volvo", "We sold the hatchback."),
    ("杭州 花生", "我们去了杭州。"),
])
def test_a_match_of_some_of_the_question_scores_under_what_it_could(
        store: Store, question: str, partial: str) -> None:
    session = store.sessions.create_session("s", "retrieval")
    filler = [f"note {i} about nothing in particular" for i in range(30)]
    store.history.import_messages(session.id, [
        *({"role": "user", "content": text} for text in filler),
        {"role": "user", "content": partial},
        {"role": "user", "content": "花生 and volvo, once" if "volvo" in question
         else "花生过敏。"}])
    found = store.recall.word_matches(session.id, question, before_turn=10**6, limit=10)
    assert len(found.scores) == 2
    assert max(found.scores.values()) < found.ceiling
    words = words_scores(found.scores, 32, None, smooth=0.0, sitting=0.0,
                         ceiling=found.ceiling)
    assert 0 < words.at(31) < 0.75


def test_sittings_break_at_gaps_and_at_unreadable_times(store: Store) -> None:
    times = ["2026-01-05T08:00:00+00:00", "2026-01-05T09:00:00+00:00",
             "2026-01-05T14:00:00+00:00", "not a time", "2026-01-05T14:10:00Z",
             "2026-01-05T14:20:00Z"]
    session = store.sessions.create_session("s", "retrieval")
    store.history.import_messages(session.id, [{"role": "user", "content": str(i), "ts": t}
                                               for i, t in enumerate(times)])
    assert store.recall.sitting_starts(session.id, 4 * 3600) == ([1, 3, 4, 5], 6)
    assert store.recall.sitting_starts(session.id, 4 * 3600, after=6) == ([], 6)
    store.history.import_messages(session.id, [{"role": "user", "content": "later",
                                                "ts": "2026-01-06T14:20:00Z"}])
    assert store.recall.sitting_starts(session.id, 4 * 3600, after=6) == ([7], 7)
    assert store.recall.sitting_starts(session.id, 0.5 * 3600)[0] == [1, 2, 3, 4, 5, 7]


def test_a_later_read_of_the_sittings_reads_what_was_added_once(store: Store) -> None:
    """Each build after the first reads the sittings of the turn added since: one statement,
    where the recorded pauses, the unrecorded ones and the last position were three."""
    session = store.sessions.create_session("会话", "retrieval")
    store.history.import_messages(session.id, [
        {"role": "user", "content": f"第{i}条", "ts": f"2026-01-05T0{i}:00:00+00:00"}
        for i in range(6)])
    assert store.recall.sitting_starts(session.id, 4 * 3600) == ([1], 6)
    store.history.import_messages(session.id, [
        {"role": "user", "content": "later", "ts": "2026-01-06T08:00:00Z"},
        {"role": "assistant", "content": "much later", "ts": "2026-01-07T08:00:00Z"},
        {"role": "assistant", "content": "replaced", "ts": "2026-01-08T08:00:00Z"}])
    # A pause not recorded (a file from before m007), and a replaced turn's message last.
    store.db.execute("UPDATE messages SET gap_s = NULL WHERE position = 8")
    store.db.execute("UPDATE messages SET superseded = 1 WHERE position = 9")
    with metered(store) as meter:
        assert store.recall.sitting_starts(session.id, 4 * 3600, after=6) == ([7, 8], 9)
    assert meter.statements == 1
    assert store.recall.sitting_starts(session.id, 4 * 3600, after=9) == ([], 9)
    assert store.recall.sitting_starts(session.id, 4 * 3600)[0] == [1, 7, 8]


def test_messages_without_pauses_get_them_in_memory_not_in_the_file(store: Store) -> None:
    session = store.sessions.create_session("s", "retrieval")
    store.history.import_messages(session.id, [
        {"role": "user", "content": "a", "ts": "2026-01-05T08:00:00+00:00"},
        {"role": "assistant", "content": "b", "ts": "2026-01-05T08:01:00+00:00"},
        {"role": "user", "content": "c", "ts": "2026-01-06T08:00:00+00:00"},
        {"role": "assistant", "content": "d", "ts": "2026-01-06T08:01:00+00:00"},
        {"role": "user", "content": "e", "ts": "2026-01-07T08:00:00+00:00"}])
    # A file from before the pauses were kept has none stored.
    store.db.execute("UPDATE messages SET gap_s = NULL WHERE position <= 4")
    assert store.recall.sitting_starts(session.id, 4 * 3600) == ([1, 3, 5], 5)
    assert store.recall.sitting_starts(session.id, 4 * 3600, after=2) == ([3, 5], 5)
    assert store.recall.sitting_starts(session.id, 30) == ([1, 2, 3, 4, 5], 5)
    gaps = [g for (g,) in store.db.execute("SELECT gap_s FROM messages ORDER BY position")]
    assert gaps == [None, None, None, None, 86340.0]


def test_fusion_weights_words_and_meaning() -> None:
    dense = np.array([0.0, 1.0, 0.5], dtype=np.float32)
    words = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    assert fuse(words, dense, Weights("hybrid", 0.5)).tolist() == [0.5, 0.5, 0.25]
    assert fuse(words, dense, Weights("bm25")).tolist() == [1.0, 0.0, 0.0]
    assert fuse(words, dense, Weights("dense")).tolist() == [0.0, 1.0, 0.5]
    assert fuse(words, None, Weights("hybrid")).tolist() == [1.0, 0.0, 0.0]


def test_meaning_sums_the_cosines_of_a_message_and_of_its_exchanges_with_its_neighbours(
) -> None:
    # Messages 1 and 3 are equally close to the question; 3 is said next to a closer one.
    query = np.array([1.0, 0.0], dtype=np.float32)
    vectors = np.array([[0.0, 1.0], [0.8, 0.6], [0.0, 1.0], [0.8, 0.6], [1.0, 0.0]],
                       dtype=np.float32)
    scores = dense_scores(query, vectors)
    assert scores[3] > scores[1] > scores[0]
    assert scores.min() == 0.0 and scores.max() == 1.0

    def unit(v: np.ndarray) -> np.ndarray:
        return v / np.linalg.norm(v)

    # The same as building the context vectors: a message's vector summed with each
    # neighbour's (none for the first and the last), normalized.
    padded = np.vstack([np.zeros(2), vectors, np.zeros(2)])
    raw = np.array([query @ v + query @ unit(v + padded[i]) + query @ unit(v + padded[i + 2])
                    for i, v in enumerate(vectors)])
    expected = (raw - raw.min()) / (raw.max() - raw.min())
    assert np.allclose(scores, expected, atol=1e-5)
    # A message without a vector scores 0 and lends nothing to its neighbours.
    present = np.array([True, True, True, False, True])
    masked = dense_scores(query, np.where(present[:, None], vectors, 0), present)
    assert masked[3] == 0.0 and masked[4] > masked[1]


def test_the_route_is_the_larger_share_of_the_fused_score() -> None:
    from chatmem.memory.ranking import route_of
    from chatmem.memory.reasons import RecallRoute

    hybrid = Weights("hybrid", 0.5)
    assert route_of(2.0, 0.9, 0.2, hybrid) is RecallRoute.WORDS
    assert route_of(2.0, 0.3, 0.8, hybrid) is RecallRoute.MEANING
    assert route_of(0.0, 0.4, 0.1, hybrid) is RecallRoute.NEIGHBOUR
    assert route_of(0.0, 0.4, 0.1, hybrid, dated=True) is RecallRoute.TIME
    assert route_of(0.0, 0.4, None, hybrid) is RecallRoute.NEIGHBOUR
    assert route_of(0.0, 0.4, None, hybrid, beside=False) is RecallRoute.SITTING
    assert route_of(0.0, 0.4, None, hybrid, dated=True, beside=False) is RecallRoute.TIME
    assert route_of(0.0, 0.0, 0.1, Weights("dense")) is RecallRoute.MEANING
    assert route_of(1.0, 0.2, 0.9, Weights("bm25")) is RecallRoute.WORDS


def ranked(scores: list[float], tokens: list[int]) -> list[Ranked]:
    return [Ranked(i, i + 1, i, "user", 0.0, s, None, s, t) for i, (s, t) in
            enumerate(zip(scores, tokens, strict=True))]


def test_packing_skips_what_does_not_fit_and_fills_with_smaller_ones() -> None:
    items = ranked([0.9, 0.8, 0.7, 0.6], [50, 200, 60, 500])
    pack(items, 120, mmr=1.0, vectors=None)
    assert [r.kept for r in items] == [True, False, True, False]
    assert items[1].why is RecallVerdict.DOES_NOT_FIT
    assert items[3].why in (RecallVerdict.DOES_NOT_FIT, RecallVerdict.NO_ROOM)


def test_mmr_leaves_out_a_near_duplicate_for_something_different() -> None:
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    plain = ranked([1.0, 0.95, 0.6], [10, 10, 10])
    pack(plain, 20, mmr=1.0, vectors=vectors)
    assert [r.kept for r in plain] == [True, True, False]
    diverse = ranked([1.0, 0.95, 0.6], [10, 10, 10])
    pack(diverse, 20, mmr=0.7, vectors=vectors)
    assert [r.kept for r in diverse] == [True, False, True]
    assert diverse[1].why is RecallVerdict.TOO_SIMILAR


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


def greedy_mmr(relevance: list[float], tokens: list[int], vectors: list[list[int]],
               room: int, mmr: float) -> tuple[list[int], list[int]]:
    """MMR as written in the papers, one candidate at a time: the best λ·relevance −
    (1−λ)·(largest similarity to what is kept), the first of equals; what does not fit
    is passed over. The positions kept and those passed over, in the order picked."""
    open_, kept, passed, used = list(range(len(relevance))), [], [], 0
    while open_ and room - used >= min(tokens):
        def score(i: int) -> float:
            closest = max((sum(a * b for a, b in zip(vectors[i], vectors[k], strict=True))
                           for k in kept), default=0)
            return mmr * relevance[i] - (1 - mmr) * closest
        pick = max(open_, key=lambda i: (score(i), -i))
        open_.remove(pick)
        if used + tokens[pick] > room:
            passed.append(pick)
            continue
        kept.append(pick)
        used += tokens[pick]
    return kept, passed


# Dyadic relevance, λ and 0/1 vectors: every score is exact in float32 and in Python,
# so the two can only differ in what they pick, never in a rounding.
@given(st.lists(st.tuples(st.integers(1, 64), st.integers(1, 40),
                          st.lists(st.integers(0, 1), min_size=6, max_size=6)),
                min_size=1, max_size=30),
       st.integers(0, 300), st.sampled_from([0.25, 0.5, 0.75]))
def test_mmr_packing_picks_what_one_at_a_time_greedy_mmr_picks(
    items: list[tuple[int, int, list[int]]], room: int, mmr: float
) -> None:
    relevance = sorted((r / 64 for r, _, _ in items), reverse=True)
    tokens = [t for _, t, _ in items]
    vectors = [v for _, _, v in items]
    rows = ranked(relevance, tokens)
    pack(rows, room, mmr=mmr, vectors=np.array(vectors, dtype=np.float32))
    kept, passed = greedy_mmr(relevance, tokens, vectors, room, mmr)
    assert [i for i, r in enumerate(rows) if r.kept] == sorted(kept)
    assert [i for i, r in enumerate(rows)
            if r.why is RecallVerdict.DOES_NOT_FIT] == sorted(passed)


def test_the_pool_is_best_first_and_later_first_among_equals() -> None:
    assert pool(np.array([0.2, 0.9, 0.0, 0.9, 0.5], dtype=np.float32)) == [3, 1, 4, 0]


def test_the_pool_keeps_the_latest_of_equals_at_its_edge() -> None:
    fused = np.array([0.5] * (POOL + 5) + [0.9], dtype=np.float32)
    best = pool(fused)
    assert len(best) == POOL and best[0] == POOL + 5
    assert best[1:] == list(range(POOL + 4, 5, -1))


@given(st.lists(st.integers(-3, 2**40), max_size=40))
def test_distinct_gives_np_uniques_values(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    found = distinct(array)
    assert found.dtype == np.int64
    assert found.tolist() == np.unique(array).tolist() == sorted(set(values))


FIRST_BUILD = """
import sys
from pathlib import Path

from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.embeddings.hashed import HashEmbedder
from chatmem.engine import open_session
from chatmem.memory.indexing import Indexing
from chatmem.memory.vector_backlog import VectorBacklog
from chatmem.plugins import load_registries
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store

with Store(Path(sys.argv[1])) as store:
    session = store.sessions.create_session("r", "retrieval", {}, provider="scripted",
                                            model="scripted")
    store.history.import_messages(session.id, [
        {"role": ("user", "assistant")[i % 2],
         "content": f"item {i}: the parcel went to Porto" if i % 3 else f"第{i}条：包裹寄到了杭州"}
        for i in range(120)])
    VectorBacklog(store, session.id, HashEmbedder(), background=False).finish()
    settings = Settings(embeddings=EmbeddingsSection(provider="hash"))
    registries = load_registries()
    engine = open_session(store, settings, ScriptedProvider(), "r",
                          strategy=registries.strategies.parse("retrieval", {"max_tokens": 300}),
                          strategies=registries.strategies,
                          embedder=registries.create_embedder("hash", settings))
    engine.background_indexing = False
    engine.indexing = Indexing(store, engine.session.id, background=False)
    for question in ("Where did item 40 go yesterday?", "第42条寄到哪里了？"):
        result = engine.run_turn(question)
        assert result.context.recall and any(row["kept"] for row in result.context.recall)
print(sorted(name for name in sys.modules if name.split(".")[:2] == ["numpy", "ma"]))
"""


def test_a_processs_first_retrieval_builds_do_not_import_numpy_ma(tmp_path: Path) -> None:
    """numpy 2's np.unique imports numpy.ma (16-19 ms of CPU on a loaded machine) to ask
    whether an array is masked: each process's first build paid it, twice a build's
    path used it (raise_by, the vectors' links). A fresh process: two hybrid turns, the
    second after the first's vectors were stored, English and Chinese."""
    done = subprocess.run([sys.executable, "-c", FIRST_BUILD, str(tmp_path / "h.db")],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(chatmem.__file__).parents[1])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "[]"
