"""Replacing the last turn (/retry, /edit-last) on every backend: the replaced turn stays
stored and inspectable, and leaves history, search, recall and counts."""

from __future__ import annotations

import pytest
from matches import match_scores

from chatmem.engine.resend import resend_last
from chatmem.errors import NotFound, ReplaceRefusal, TurnNotReplaceable

FIRST, SECOND = "my order is ORD-7731", "我们五月去杭州，订了西湖边的酒店"


def sent(result) -> list[str]:
    return [m["content"] for m in result.context.messages()]


def stored_rows(store, session_id: int) -> int:
    """Every message row of the session, replaced ones included (append-only)."""
    return int(store.db.execute("SELECT count(*) FROM messages WHERE session_id = ?",
                                [session_id]).fetchone()[0])


def test_retry_regenerates_the_last_turn_and_keeps_the_old_one_out_of_memory(
        make_engine) -> None:
    engine = make_engine("buffer")
    engine.run_turn(FIRST)
    old = engine.run_turn(SECOND)
    sid = engine.session.id
    assert old.reply == f"echo #2: {SECOND}"

    new = resend_last(engine)

    # The model read the history before the replaced turn, then the same input: not its
    # own earlier answer.
    assert sent(new) == ["Be brief.", FIRST, f"echo #1: {FIRST}", SECOND]
    assert new.status == "ok" and new.reply == f"echo #3: {SECOND}"
    # The turn row is the third request; in the history it is turn 2 again, with no gap.
    assert new.record.number == 3 and new.record.history_turn == 2
    store = engine.store
    assert [(m.turn, m.role, m.content) for m in store.history.messages(sid)] == [
        (1, "user", FIRST), (1, "assistant", f"echo #1: {FIRST}"),
        (2, "user", SECOND), (2, "assistant", f"echo #3: {SECOND}")]
    assert store.history.turn_count(sid) == 2
    assert stored_rows(store, sid) == 6
    replaced = store.turns.turn(sid, 2)
    assert (replaced.status, replaced.reply, replaced.superseded_by) == (
        "ok", f"echo #2: {SECOND}", 3)
    assert store.turns.turn(sid, 3).superseded_by is None
    listed = {s.name: s for s in store.sessions.list_sessions()}[engine.session.name]
    assert (listed.messages, listed.requests) == (4, 3)
    # The next turn's history holds the new reply only.
    after = engine.run_turn("and then?")
    assert sent(after)[1:-1] == [FIRST, f"echo #1: {FIRST}", SECOND, f"echo #3: {SECOND}"]


def test_edit_last_in_chinese_replaces_the_input_and_search_finds_only_the_new_turn(
        make_engine) -> None:
    engine = make_engine("buffer")
    engine.run_turn(FIRST)
    engine.run_turn(SECOND)
    sid = engine.session.id
    edited = "我们六月去苏州，住在拙政园附近"
    result = resend_last(engine, edited)
    assert sent(result)[-1] == edited
    store = engine.store
    assert [m.content for m in store.history.messages(sid) if m.role == "user"] == [FIRST, edited]
    new_positions = {m.position for m in store.history.messages(sid, 2, 2)}
    assert match_scores(store, sid, "杭州", before_turn=10, limit=5) == {}
    assert set(match_scores(store, sid, "苏州", before_turn=10, limit=5)) <= new_positions
    assert match_scores(store, sid, "苏州", before_turn=10, limit=5)
    assert store.turns.turn(sid, 2).input == SECOND and store.turns.turn(sid, 2).superseded_by == 3


def test_a_cancelled_replacement_puts_the_old_turn_back(make_engine) -> None:
    engine = make_engine("buffer")
    engine.run_turn(FIRST)
    engine.run_turn(SECOND)
    sid = engine.session.id
    before = engine.store.history.messages(sid)

    def interrupt(delta: str) -> None:
        raise KeyboardInterrupt

    result = resend_last(engine, on_delta=interrupt)
    assert result.status == "cancelled"
    assert engine.store.history.messages(sid) == before
    assert engine.store.turns.turn(sid, 2).superseded_by is None
    assert engine.store.history.turn_count(sid) == 2
    assert [m.content for m in engine.store.history.messages(sid)][-1] == f"echo #2: {SECOND}"


def test_retry_twice_replaces_the_replacement(make_engine) -> None:
    engine = make_engine("window", k=3)
    engine.run_turn(FIRST)
    resend_last(engine)
    result = resend_last(engine, "second try")
    sid = engine.session.id
    assert sent(result) == ["Be brief.", "second try"]
    assert [t.superseded_by for t in engine.store.turns.turns(sid)] == [2, 3, None]
    assert [m.content for m in engine.store.history.messages(sid)] == [
        "second try", "echo #3: second try"]


def test_nothing_to_replace_without_a_completed_last_turn(make_engine) -> None:
    engine = make_engine("buffer")
    with pytest.raises(NotFound):
        resend_last(engine)
    engine.run_turn(FIRST)

    def interrupt(delta: str) -> None:
        raise KeyboardInterrupt

    assert engine.run_turn("cut short", on_delta=interrupt).status == "cancelled"
    with pytest.raises(TurnNotReplaceable) as refused:
        resend_last(engine)
    assert (refused.value.turn, refused.value.why) == (2, ReplaceRefusal.NOT_COMPLETED)
    assert engine.store.history.turn_count(engine.session.id) == 1


def test_a_turn_facts_were_extracted_from_cannot_be_replaced(make_engine) -> None:
    """Memory built on a reply must not outlive it: a turn facts came from is refused,
    with nothing changed; one that gave no fact is replaced and the next turn is still
    read by extraction."""
    engine = make_engine("entity")
    engine.run_turn("I live in Lisbon.")
    sid = engine.session.id
    assert {f.key: f.value for f in engine.state.live_facts()} == {"city": "Lisbon"}
    before = engine.store.history.messages(sid)
    with pytest.raises(TurnNotReplaceable) as refused:
        resend_last(engine, "I live in Porto.")
    assert (refused.value.turn, refused.value.why) == (1, ReplaceRefusal.FACTS)
    assert engine.store.history.messages(sid) == before
    assert engine.store.turns.turn(sid).superseded_by is None

    engine.run_turn("Tell me one curious thing about comets.")
    resend_last(engine, "Tell me one curious thing about tides.")
    engine.run_turn("I am allergic to peanuts.")
    assert {f.key: f.value for f in engine.state.live_facts()} == {
        "city": "Lisbon", "allergy": "peanuts"}


def test_a_fact_typed_by_hand_does_not_hold_the_turn_before_it(make_engine) -> None:
    """/remember or a forget after a turn made it "already in memory (1 fact from it or
    since)", even under a strategy that extracts no fact; a fact the extractor took from the
    turn still holds it."""
    from chatmem.store.records import FactScope

    engine = make_engine("window", k=3)
    engine.run_turn("my flight is at 9")
    sid = engine.session.id
    store = engine.store
    # As /remember stores one: no source turn.
    note = store.facts.upsert_fact("note", "buy milk", scope=FactScope.SESSION,
                                   session_id=sid, source_session_id=sid)
    assert resend_last(engine).record.history_turn == 1
    store.facts.forget_fact(note.id)
    assert resend_last(engine, "my flight is at 10").record.history_turn == 1

    facts = make_engine("entity")
    facts.run_turn("I live in Lisbon.")
    fid = facts.session.id
    store.facts.upsert_fact("note", "买牛奶", scope=FactScope.SESSION, session_id=fid,
                            source_session_id=fid)
    with pytest.raises(TurnNotReplaceable) as refused:
        resend_last(facts, "I live in Porto.")
    assert refused.value.why == ReplaceRefusal.FACTS
    facts.run_turn("Tell me one curious thing about comets.")
    store.facts.upsert_fact("note", "买面包", scope=FactScope.SESSION, session_id=fid,
                            source_session_id=fid)
    assert resend_last(facts, "Tell me about tides.").record.history_turn == 2
    assert {f.key: f.value for f in facts.state.live_facts()} == {
        "city": "Lisbon", "note": "买面包"}


def test_a_turn_a_summary_covers_cannot_be_replaced(make_engine) -> None:
    engine = make_engine("summary")
    engine.run_turn(FIRST)
    sid = engine.session.id
    assert engine.store.memory.summaries(sid, "summary"), "the summary strategy summarized turn 1"
    with pytest.raises(TurnNotReplaceable) as refused:
        resend_last(engine)
    assert (refused.value.turn, refused.value.why) == (1, ReplaceRefusal.SUMMARIZED)


def test_recall_never_brings_back_the_replaced_turn(make_engine) -> None:
    engine = make_engine("retrieval", mode="bm25")
    engine.run_turn("the locker code is 4417")
    resend_last(engine, "the locker code is 9902")
    for topic in ("comets", "tides", "kites"):
        engine.run_turn(f"Tell me one curious thing about {topic}.")
    context = engine.build_context("what is the locker code?")
    recalled = [m.content for m in context.part("recalled").messages]
    assert "the locker code is 9902" in recalled
    assert not [text for text in recalled if "4417" in text]
    assert "4417" not in "".join(m["content"] for m in context.messages())


def test_a_fork_and_an_export_hold_the_conversation_without_the_replaced_turn(
        make_engine) -> None:
    from chatmem.transcripts.format import stored_transcript

    engine = make_engine("buffer")
    engine.run_turn(FIRST)
    engine.run_turn(SECOND)
    resend_last(engine, "我们六月去苏州")
    store, name = engine.store, engine.session.name
    live = [(m.role, m.content) for m in store.history.messages(engine.session.id)]
    assert [c for _, c in live] == [FIRST, f"echo #1: {FIRST}", "我们六月去苏州",
                                    "echo #3: 我们六月去苏州"]
    report = store.forks.fork_session(name, "branch")
    assert report.messages == 4
    fork = store.sessions.session("branch")
    assert [(m.role, m.content) for m in store.history.messages(fork.id)] == live
    exported = stored_transcript(store, store.sessions.session(name))
    assert [m.content for m in exported.messages] == [c for _, c in live]


def test_a_turn_left_hidden_by_a_crash_can_still_be_replaced(make_engine) -> None:
    engine = make_engine("buffer")
    engine.run_turn(FIRST)
    engine.run_turn(SECOND)
    engine.store.turns.hide_turn(engine.session.id)  # the process died before the new reply
    assert engine.store.history.turn_count(engine.session.id) == 1
    result = resend_last(engine)
    assert sent(result) == ["Be brief.", FIRST, f"echo #1: {FIRST}", SECOND]
    assert engine.store.turns.turn(engine.session.id, 2).superseded_by == 3
