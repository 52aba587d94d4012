"""Words on PostgreSQL: English stemming, Chinese bigrams, and FTS5's BM25 ranking."""

from __future__ import annotations

import sqlite3

import pytest
from pg import add_message, add_session, count

from chatmem import fts
from chatmem.store.postgres_backend import PostgresBackend
from chatmem.store.sqlite_words import match_terms

# -- words -------------------------------------------------------------------------------


def test_word_scores_stem_english_and_match_chinese_bigrams(pg_backend: PostgresBackend) -> None:
    one, two = add_session(pg_backend, "one"), add_session(pg_backend, "two")
    running = add_message(pg_backend, one, 0, "I was running along the river")
    hangzhou = add_message(pg_backend, one, 1, "我们五月去杭州旅行")
    add_message(pg_backend, one, 2, "nothing relevant here")
    elsewhere = add_message(pg_backend, two, 0, "She runs every morning in 杭州")

    def found(query: str, session_id: int | None = None, before_turn: int | None = None
              ) -> list[int]:
        scores = pg_backend.word_scores(fts.query_terms(query), session_id, before_turn, 10)
        assert all(isinstance(s, float) and s > 0 for _, _, s in scores)
        return [message_id for message_id, _, _ in scores]

    assert found("runs", one) == [running]
    assert sorted(found("run")) == sorted([running, elsewhere])
    assert found("杭州", one) == [hangzhou]
    assert found("去杭州", None) == [hangzhou, elsewhere]  # two bigrams beat one
    assert found("杭州", one, before_turn=2) == []
    assert found("tennis") == []
    assert pg_backend.word_scores([], None, None, 10) == []
    positions = {m: p for m, p, _ in pg_backend.word_scores(["杭州"], None, None, 10)}
    assert positions == {hangzhou: 1, elsewhere: 0}


def test_counting_matches_stops_after_most_plus_one(pg_backend: PostgresBackend) -> None:
    session_id = add_session(pg_backend)
    for i in range(6):
        add_message(pg_backend, session_id, i, f"rain number {i}")
    assert pg_backend.count_words_matches(["rain"], 2)[0] == 3
    assert pg_backend.count_words_matches(["rain"], 10)[0] == 6
    assert pg_backend.count_words_matches(["snow"], 10)[0] == 0


def test_reindexing_replaces_and_unindexing_removes_entries(pg_backend: PostgresBackend) -> None:
    session_id = add_session(pg_backend)
    message_id = add_message(pg_backend, session_id, 0, "my card is 4111 secret")
    with pg_backend.write():
        pg_backend.index_words([(message_id, fts.index_text("my card is [redacted]"))])
    assert pg_backend.count_words_matches(["secret"], 5)[0] == 0
    assert pg_backend.count_words_matches(["redacted"], 5)[0] == 1
    with pg_backend.write():
        pg_backend.unindex_words([message_id])
    pg_backend.forget_erased_words()
    pg_backend.fold_log()
    assert count(pg_backend, "message_words") == 0


def test_the_word_statistics_follow_every_change_of_the_index(pg_backend: PostgresBackend) -> None:
    def statistics() -> tuple[int, int]:
        # One row per session (p007), each that session's entries and tokens.
        rows = pg_backend.execute("SELECT session_id, entries, tokens FROM word_statistics"
                                  " WHERE entries > 0 ORDER BY session_id").fetchall()
        actual = pg_backend.execute("SELECT session_id, count(*), sum(tokens) FROM message_words"
                                    " GROUP BY session_id ORDER BY session_id").fetchall()
        assert [tuple(map(int, r)) for r in rows] == [tuple(map(int, r)) for r in actual]
        return sum(int(r[1]) for r in rows), sum(int(r[2]) for r in rows)

    one, two = add_session(pg_backend, "one"), add_session(pg_backend, "two")
    # 8 tokens as FTS5 counts them: the, cat, sat, on, three bigrams and the run's last
    # character; 杭州 is a bigram and its last character.
    first = add_message(pg_backend, one, 0, "the cat_sat on 我们五月")
    add_message(pg_backend, one, 1, "dinner at eight")
    add_message(pg_backend, two, 0, "杭州")
    assert statistics() == (3, 8 + 3 + 2)
    with pg_backend.write():
        pg_backend.index_words([(first, fts.index_text("[redacted]"))])
    assert statistics() == (3, 1 + 3 + 2)
    with pg_backend.write():
        pg_backend.execute("DELETE FROM sessions WHERE id = ?", [one])  # cascades to the words
    assert statistics() == (1, 2)


# -- the same recall as SQLite ---------------------------------------------------------------

_WORDS = ("travel", "travelling", "travelled", "trip", "trips", "flight", "flights", "booking",
          "booked", "hotel", "hotels", "running", "runs", "ran", "cat", "cats", "cooking",
          "cooked", "dinner", "dinners", "meeting", "meetings", "budget", "report", "reports",
          "deadline", "deadlines", "python", "database", "databases", "garden", "gardening",
          "Hangzhou", "Paris", "weekend", "weekends", "train", "trains")
_CHINESE = ("我们五月去杭州旅行", "预订酒店", "明天开会讨论预算", "周末去公园跑步",
            "晚饭做了红烧肉", "数据库迁移", "杭州的酒店很贵", "报告的截止日期")
_STOP = ("the", "and", "we", "to", "a", "is")


def _conversation(seed: int, count: int) -> list[str]:
    import random

    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        words = [rng.choice([*_WORDS, *_STOP]) for _ in range(rng.randint(2, 14))]
        if rng.random() < 0.4:
            words.insert(rng.randint(0, len(words)), rng.choice(_CHINESE))
        texts.append(" ".join(words))
    return texts


def test_word_scores_rank_as_sqlite_fts5_bm25_does(pg_backend: PostgresBackend) -> None:
    """SQLite's index (schema m003: FTS5, porter) and this backend, given the same messages,
    score every query's matches alike: the same messages, in the same order."""
    sqlite = sqlite3.connect(":memory:")
    sqlite.execute("CREATE VIRTUAL TABLE messages_fts USING fts5(terms,"
                   " tokenize='porter unicode61')")
    sessions = {add_session(pg_backend, f"s{seed}"): _conversation(seed, 40) for seed in range(3)}
    where: dict[int, tuple[int, int]] = {}
    for session_id, texts in sessions.items():
        for position, text in enumerate(texts):
            message_id = add_message(pg_backend, session_id, position, text, turn=position // 2 + 1)
            sqlite.execute("INSERT INTO messages_fts (rowid, terms) VALUES (?, ?)",
                           [message_id, fts.index_text(text)])
            where[message_id] = (session_id, position // 2 + 1)
    queries = ["travelling to Hangzhou", "booked hotels", "cooking dinner", "the deadlines",
               "杭州酒店", "预算会议", "running in the garden", "database report 数据库",
               "python", "trips and flights 旅行"]
    compared = 0
    for query in queries:
        terms = fts.query_terms(query)
        for scope in (None, *sessions):
            expected = sorted(
                ((-score, rowid) for rowid, score in sqlite.execute(
                    "SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts"
                    " MATCH ?", [match_terms(terms)])
                 if scope in (None, where[rowid][0]) and where[rowid][1] < 15),
                key=lambda item: (-item[0], item[1]))[:10]
            found = pg_backend.word_scores(terms, scope, 15, 10)
            assert [m for m, _, _ in found] == [m for _, m in expected], (query, scope)
            assert [s for _, _, s in found] == pytest.approx([s for s, _ in expected],
                                                             rel=1e-9), query
            compared += len(found)
    assert compared > 100
