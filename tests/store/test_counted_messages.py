"""`candidate_rows`: recall's candidates and their stored token counts in one read."""

from __future__ import annotations

from pathlib import Path

from cached_counts import cached_counts
from matches import match_scores
from meter import metered
from registered import open_session

from chatmem import fts
from chatmem.config.sections import EmbeddingsSection
from chatmem.config.settings import Settings
from chatmem.engine.resend import resend_last
from chatmem.providers.scripted import ScriptedProvider
from chatmem.store import Store
from chatmem.store.word_terms import WeightedTerm


def test_records_and_counts_match_the_two_reads_they_replace(tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        settings = Settings(embeddings=EmbeddingsSection(provider="none"))
        engine = open_session(store, settings, ScriptedProvider(), "s", strategy="window")
        for line in ["My order is ORD-7731.", "我们五月去杭州旅行，预算五千元。"]:
            engine.run_turn(line)
        sid = engine.session.id
        # Imported messages have no stored count: they come back with None.
        store.history.import_messages(sid, [{"role": "user", "content": "导入的问题"},
                                            {"role": "assistant", "content": "an imported reply"}])
        key = engine.counter.key
        positions = [m.position for m in store.history.messages(sid)]
        with metered(store) as meter:
            found = {row[0]: row for row in store.recall.candidate_rows(sid, [*positions, 99],
                                                                         key)}
        assert meter.statements == 1
        records = store.recall.messages_at(sid, positions)
        counts = cached_counts(store, sid, key)
        assert {p: (r.position, r.id, r.turn, r.role, r.content, r.created_at)
                for p, r in records.items()} == {p: (*row[:5], row[6])
                                                 for p, row in found.items()}
        assert {row[1]: row[5] for row in found.values() if row[5] is not None} == counts
        assert len(counts) == 4  # the turns' messages, counted at commit
        assert [row[5] for p, row in sorted(found.items()) if p > 4] == [None, None]
        # Another tokenizer's counts are not these.
        assert all(row[5] is None for row in store.recall.candidate_rows(sid, positions,
                                                                         "other"))


def test_candidate_rows_leave_out_a_replaced_turn_and_what_is_past_the_end(
        tmp_path: Path) -> None:
    with Store(tmp_path / "h.db") as store:
        settings = Settings(embeddings=EmbeddingsSection(provider="none"))
        engine = open_session(store, settings, ScriptedProvider(), "s", strategy="window")
        for line in ["My order is ORD-7731.", "我们五月去杭州旅行，预算五千元。", "again"]:
            engine.run_turn(line)
        resend_last(engine)  # the last turn's messages stay stored, superseded
        sid = engine.session.id
        store.history.import_messages(sid, [{"role": "system", "content": "导入的系统消息"}])
        key = engine.counter.key
        positions = range(1, store.recall.last_position(sid) + 3)
        with metered(store) as meter:
            rows = store.recall.candidate_rows(sid, positions, key)
        assert meter.statements == 1
        records = store.recall.messages_at(sid, positions)
        counts = cached_counts(store, sid, key)
        # The replaced turn's messages are not candidates; nor are positions past the end.
        assert len(records) < store.recall.last_position(sid)
        assert sorted(rows) == sorted((r.position, r.id, r.turn, r.role, r.content,
                                       counts.get(r.id), r.created_at) for r in records.values())
        assert [n for p, *_, n, _ in sorted(rows)][-1] is None  # imported: not counted


def test_message_count_counts_the_history_no_further_than_asked(store: Store) -> None:
    """Every backend: a replaced turn's messages are not history, and the count stops at
    `at_most` (a client's request compares it with the history it sent)."""
    settings = Settings(embeddings=EmbeddingsSection(provider="none"))
    engine = open_session(store, settings, ScriptedProvider(), "计数", strategy="window")
    for line in ["My order is ORD-7731.", "我们五月去杭州旅行，预算五千元。", "again"]:
        engine.run_turn(line)
    resend_last(engine)  # the last turn's two messages stay stored, superseded
    sid = engine.session.id
    held = len(store.history.messages(sid))
    assert held == 6
    assert [store.history.message_count(sid, at_most=n) for n in (0, 2, 5, 6, 7, 100)] == [
        0, 2, 5, 6, 6, 6]
    with metered(store) as meter:
        store.history.message_count(sid, at_most=3)
    assert meter.statements == 1


def test_newest_word_matches_come_newest_first_and_stop_at_the_limit(store: Store) -> None:
    """Every backend: the newest messages holding any of the words, in any session, a
    replaced turn's left out; Chinese words as English ones."""
    settings = Settings(embeddings=EmbeddingsSection(provider="none"))
    first = open_session(store, settings, ScriptedProvider(), "甲", strategy="window")
    second = open_session(store, settings, ScriptedProvider(), "乙", strategy="window")
    for n in range(3):
        first.run_turn(f"The locker {n} is near the window, 预算五千元。")
        second.run_turn(f"Another cabinet {n}, 预算五千元。")
    second.run_turn("My locker moved, 预算五千元。")
    resend_last(second)  # its two messages stay stored, superseded, and still match
    held = sorted(((m.id, m.content) for e in (first, second)
                   for m in store.history.messages(e.session.id)), reverse=True)

    def newest_holding(word: str, limit: int) -> list[int]:
        return [i for i, content in held if word in content][:limit]

    assert len(held) == 14
    assert store.db.newest_word_matches(["locker"], 3) == newest_holding("locker", 3)
    assert store.db.newest_word_matches(fts.query_terms("预算"), 100) == newest_holding(
        "预算", 100)
    assert len(newest_holding("预算", 100)) == 14
    assert store.db.newest_word_matches(["cabinet", "window"], 4) == [
        i for i, c in held if "cabinet" in c or "window" in c][:4]
    assert store.db.newest_word_matches(fts.query_terms("nowhere"), 5) == []


def test_how_often_a_conversation_says_a_word_is_read_in_it_alone(store: Store) -> None:
    """Every backend: a conversation's own counts of each word, stopping past `most`, and
    where it says it, before a turn, a replaced turn's left out; None while the
    conversation is the whole history (the index's counts are its own)."""
    settings = Settings(embeddings=EmbeddingsSection(provider="none"))
    mine = open_session(store, settings, ScriptedProvider(), "甲", strategy="window")
    for line in ("Alice lives on Rue Oberkampf.", "阿丽丝住在杭州。", "Trip day one."):
        mine.run_turn(line)
    assert store.db.session_word_counts(["alice"], mine.session.id, 10) is None
    other = open_session(store, settings, ScriptedProvider(), "乙", strategy="window")
    for n in range(4):
        other.run_turn(f"Alice and I planned garden bed {n}, 阿丽丝也来了。")
    mine.run_turn("Alice moved, 阿丽丝搬家了。")
    resend_last(mine)  # its messages stay stored, superseded, and still match
    mine.run_turn("Alice again, Alice.")
    chinese = fts.query_terms("阿丽丝")
    said = store.db.session_word_counts(["alice", *chinese, "nowhere"], mine.session.id, 10)
    assert said is not None
    assert said.counts == (8, 6, 6, 0)  # the replaced turn's messages counted
    assert said.entries == 12  # six turns, the replaced one's two messages included
    held = store.history.messages(mine.session.id)

    def holding(word: str, before_turn: int = 99) -> list[int]:
        return [m.position for m in held if word in m.content and m.turn < before_turn]

    def scores(term: str, before_turn: int = 99, scored: bool = True) -> dict[int, float]:
        count = store.db.count_words_matches([term], 100)[0] if scored else None
        return dict(store.db.session_word_scores([WeightedTerm(term, 2.0, count)],
                                                 mine.session.id, before_turn, 50))

    assert sorted(scores("alice")) == holding("Alice") and len(holding("Alice")) == 6
    assert sorted(scores(chinese[0])) == holding("阿丽丝") and len(holding("阿丽丝")) == 4
    assert sorted(scores("alice", 2)) == holding("Alice", 2)
    assert set(scores("alice", scored=False).values()) == {2.0}
    # BM25 without the index's IDF: saying it twice in a message weighs more than once.
    twice = next(m.position for m in held if m.content == "Alice again, Alice.")
    once = next(m.position for m in held if m.content == "Alice lives on Rue Oberkampf.")
    assert scores("alice")[twice] > scores("alice")[once] > 0
    # Each term's score is summed; best first, the limit kept.
    both = store.db.session_word_scores(
        [WeightedTerm("alice", 2.0, None), WeightedTerm(chinese[0], 1.0, None)],
        mine.session.id, 99, 3)
    assert [score for _, score in both] == [3.0, 3.0, 2.0]
    assert {p for p, _ in both[:2]} == set(holding("Alice")) & set(holding("阿丽丝"))
    capped = store.db.session_word_counts(["alice"], other.session.id, 2)
    assert capped is not None and capped.counts == (3,)


def test_a_conversation_ranks_its_words_beside_others_as_it_does_alone(store: Store) -> None:
    """Every backend: a conversation's word search, by its own counts, finds and orders
    what it found while it was the whole history, whether the others say its words all
    the time ("garden") or never (a name)."""
    settings = Settings(embeddings=EmbeddingsSection(provider="none"))
    mine = open_session(store, settings, ScriptedProvider(), "mine", strategy="window")
    lines = ["Alice planted the garden near the river.", "The river trip with Bob.",
             "Garden plans: tomatoes, then a garden shed for Alice.", "Alice 在杭州。",
             "Bob fixed the shed.", "Nothing about it.", "Alice, Alice and the garden."]
    for line in lines:
        mine.run_turn(line)
    query = "garden plans with Alice near the river 杭州"

    def ranked() -> list[int]:
        found = match_scores(store, mine.session.id, query, before_turn=99, limit=50)
        # Scores within a thousandth are a tie: the others' lengths move BM25's average
        # length, which may swap two messages scored alike (5 and 8 here, 1.70808/1.70822).
        return [p for p, _ in sorted(found.items(),
                                     key=lambda item: (-round(item[1], 3), item[0]))]

    alone = ranked()
    other = open_session(store, settings, ScriptedProvider(), "other", strategy="window")
    store.history.import_messages(other.session.id, [
        {"role": "user", "content": f"The garden bed {n} by the river."} for n in range(800)])
    assert store.db.session_word_counts(["garden"], mine.session.id, 750) is not None
    assert ranked() == alone and len(alone) > 8


def test_a_long_input_searches_a_conversation_among_others(store: Store) -> None:
    """Every backend: thousands of distinct words (a pasted document), each read in the
    conversation's ranges, fit the statements the database takes; the match is found."""
    settings = Settings(embeddings=EmbeddingsSection(provider="none"))
    other = open_session(store, settings, ScriptedProvider(), "other", strategy="window")
    mine = open_session(store, settings, ScriptedProvider(), "mine", strategy="window")
    for n in range(20):  # turns taken in turn: the conversation lies in twenty runs
        other.run_turn(f"Garden bed {n}.")
        mine.run_turn(f"Word w{n}x and 杭州{n}。")
    pasted = " ".join(f"w{n}x" for n in range(3000)) + "".join(
        chr(0x4E00 + n) for n in range(1500))
    assert len(fts.query_terms(pasted)) > 4000
    found = match_scores(store, mine.session.id, pasted, before_turn=99, limit=500)
    held = {m.position for m in store.history.messages(mine.session.id) if "x and" in m.content}
    assert held and held <= set(found)


def test_a_conversation_s_newest_matches_are_its_own_newest_first(store: Store) -> None:
    """Every backend: a search in one conversation (recall.newest_matches) finds its own
    newest messages saying the words, another conversation's between them left out,
    Chinese words as English ones."""
    mine = store.sessions.create_session("北京之旅", "window", {})
    other = store.sessions.create_session("other", "window", {})
    for start in (0, 3, 6):  # the two conversations' messages interleave
        store.history.import_messages(mine.id, [
            {"role": "user", "content": f"第{n}天 北京天气 and Paris weather"}
            for n in range(start, start + 3)])
        store.history.import_messages(other.id, [
            {"role": "user", "content": f"Other {n}: 北京天气 in Paris"} for n in range(4)])
    store.history.import_messages(mine.id, [{"role": "assistant", "content": "好的"}])

    for query in ("北京", "Paris"):
        found = store.recall.newest_matches(mine.id, query, limit=4)
        assert [m.content for m in found] == [
            f"第{n}天 北京天气 and Paris weather" for n in (8, 7, 6, 5)], query
        everything = store.recall.newest_matches(mine.id, query, limit=100)
        assert [m.content[:3] for m in everything] == [f"第{n}天" for n in range(8, -1, -1)]
        assert {m.session_id for m in everything} == {mine.id}
    assert store.recall.newest_matches(mine.id, "东京", limit=5) == []
