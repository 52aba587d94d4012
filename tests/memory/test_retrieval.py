"""`retrieval`: earlier messages ranked by words and meaning, packed into a budget, labelled."""

from __future__ import annotations

import sys

import pytest
from fact_conversations import (
    ENGLISH_FILLER,
    chinese_session,
    context_with,
    english_session,
    run_conversation,
)
from registered import create_strategy
from vectors import vector_models

from chatmem.embeddings.hashed import HashEmbedder
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import Context, Message
from chatmem.memory.reasons import RecallVerdict
from chatmem.notices import NoEmbedder

ALIASES = {"sibling": "brother", "living": "job", "work": "job"}


def recalled(context) -> list[str]:
    part = context.part("recalled")
    return [] if part is None else [m.content for m in part.messages]


def recalled_turns(context) -> list[int]:
    part = context.part("recalled")
    return [] if part is None else [m.turn for m in part.messages]


def test_a_question_naming_the_order_recalls_the_message_that_stated_it(make_engine) -> None:
    engine = english_session(make_engine, "retrieval", mode="bm25")
    context = context_with(engine, "retrieval", "Where is my order?", mode="bm25")
    assert "My order id is ORD-7731." in recalled(context)
    assert context.part("recalled").reason.method.mode == "bm25"
    assert [m.turn for m in context.part("history").messages] == [39, 39]
    assert context.tokens <= 2000


def test_only_the_newest_turn_is_always_sent_the_one_before_is_recalled_when_relevant(
    make_engine
) -> None:
    engine = english_session(make_engine, "retrieval", mode="bm25")
    before, newest = engine.history().turns(38, 39)
    asked = before.messages[0].content
    context = context_with(engine, "retrieval", asked, mode="bm25")
    assert [m.turn for m in context.part("history").messages] == [39, 39]
    assert before.messages[0].id in {m.id for m in context.part("recalled").messages}
    # Asked about something else, with room for little, the order's message wins it.
    elsewhere = context_with(engine, "retrieval", "Where is my order?", mode="bm25",
                             max_tokens=100)
    assert [m.id for m in elsewhere.part("history").messages] == [m.id for m in newest.messages]
    assert "My order id is ORD-7731." in recalled(elsewhere)
    assert before.messages[0].id not in {m.id for p in elsewhere.parts for m in p.messages}
    two = context_with(engine, "retrieval", "Where is my order?", mode="bm25", recent=2)
    assert [m.turn for m in two.part("history").messages] == [38, 38, 39, 39]


def test_recalled_messages_are_in_time_order_and_never_repeat_the_recent_turns(
    make_engine
) -> None:
    engine = english_session(make_engine, "retrieval", mode="bm25")
    question = "Tell me about volcanoes, glaciers and fossils and wolves and auroras"
    context = context_with(engine, "retrieval", question, mode="bm25", recent=2)
    turns = recalled_turns(context)
    assert turns == sorted(turns) and len(turns) >= 5
    ids = [m.id for m in context.part("recalled").messages]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    history = {m.turn for m in context.part("history").messages}
    assert history == {38, 39} and not history & set(turns)


def test_the_budget_bounds_the_whole_context_and_a_bigger_one_recalls_more(make_engine) -> None:
    engine = english_session(make_engine, "retrieval", mode="bm25")
    question = "Tell me a curious thing about fossils, wolves, comets and opera"
    sizes = []
    for budget in (120, 250, 600, 2000):
        context = context_with(engine, "retrieval", question, mode="bm25", max_tokens=budget)
        assert context.tokens <= budget
        sizes.append(len(recalled(context)))
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]


def test_top_k_caps_how_many_messages_are_recalled(make_engine) -> None:
    engine = english_session(make_engine, "retrieval", mode="bm25")
    context = context_with(engine, "retrieval", "curious thing about fossils and wolves",
                           mode="bm25", top_k=1)
    assert len(recalled(context)) == 1
    rows = context.recall
    assert any((r["why"], r.get("top_k")) == (RecallVerdict.TOP_K.value, 1) for r in rows)


def test_english_words_are_stemmed(make_engine) -> None:
    engine = make_engine("retrieval", mode="bm25")
    run_conversation(engine, ["We travelled to Porto by train.", *ENGLISH_FILLER[:8]])
    context = context_with(engine, "retrieval", "Which places did I travel to?", mode="bm25")
    assert "We travelled to Porto by train." in recalled(context)


def test_chinese_question_recalls_the_message_that_stated_hangzhou(make_engine) -> None:
    engine = chinese_session(make_engine, "retrieval", mode="bm25")
    context = context_with(engine, "retrieval", "我们去杭州的计划是什么？", mode="bm25")
    best = max(context.recall, key=lambda r: r["fused"])
    assert best["kept"] and best["turn"] == 4
    assert any("杭州" in text for text in recalled(context))


FTS5_SYNTAX = ['"', "*", "NEAR", "-", ":", 'order" OR "x', "NEAR(a b)", "order*", "-order",
               "order:ORD", "^order", "AND OR NOT", "（杭州）。「预算」！", "ORD-7731？杭州，"]


def test_queries_with_fts5_syntax_never_fail(make_engine) -> None:
    """Each query asked of one 39-turn session (context_with only reads it: building that
    session for each query was 42 of this module's slowest cases)."""
    engine = english_session(make_engine, "retrieval", mode="bm25")
    for query in FTS5_SYNTAX:
        try:
            context = context_with(engine, "retrieval", query, mode="bm25")
        except Exception as failed:
            failed.add_note(f"asked: {query!r}")
            raise
        assert context.parts[-1].messages[0].content == query, query
        if "ORD" in query or "order" in query.lower():
            assert 2 in recalled_turns(context), query


# -- meaning: the deterministic embedder ------------------------------------------------


def sibling_session(make_engine, embedder=None, **params):
    engine = make_engine("retrieval", embedder=embedder, **params)
    run_conversation(engine, ["My brother got hired as a dentist in Leeds.",
                              *ENGLISH_FILLER[:20]])
    engine.indexing.finish(engine.embedder)  # what the backlog does between turns
    return engine


def test_dense_recall_finds_a_paraphrase_that_words_cannot(make_engine) -> None:
    embedder = HashEmbedder(aliases=ALIASES)
    engine = sibling_session(make_engine, embedder)
    question = "What does my sibling do for a living?"
    by_words = context_with(engine, "retrieval", question, mode="bm25", max_tokens=200)
    assert "My brother got hired as a dentist in Leeds." not in recalled(by_words)
    for mode in ("dense", "hybrid"):
        chosen = create_strategy("retrieval", {"mode": mode, "max_tokens": "200"})
        context = chosen.build(engine.request(question))
        assert "My brother got hired as a dentist in Leeds." in recalled(context), mode
        kept = [r for r in context.recall if r["kept"]]
        assert all(r["dense"] is not None for r in kept)
        assert context.part("recalled").reason.method.mode == mode


def test_hybrid_scores_are_the_weighted_sum_of_word_and_meaning_scores(make_engine) -> None:
    engine = sibling_session(make_engine, HashEmbedder(aliases=ALIASES))
    question = "What does my sibling do for a living, the dentist job?"
    for weight in (0.0, 0.3, 1.0):
        chosen = create_strategy("retrieval", {"dense_weight": str(weight)})
        context = chosen.build(engine.request(question))
        for row in context.recall:
            expected = (1 - weight) * row["words"] + weight * row["dense"]
            assert row["fused"] == pytest.approx(expected, abs=2e-3)


def test_vectors_are_computed_once_per_message_and_kept_per_model(make_engine, store) -> None:
    embedder = HashEmbedder(aliases=ALIASES)
    engine = sibling_session(make_engine, embedder)
    messages = len(store.history.messages(engine.session.id))
    # Each message: its own vector, once (its context vectors are derived); each build:
    # the query.
    assert embedder.calls == messages
    queries = embedder.queries
    engine.build_context("anything")
    engine.build_context("anything else")
    assert (embedder.calls, embedder.queries) == (messages, queries + 2)
    assert vector_models(store) == {embedder.key: messages}
    other = HashEmbedder(dimensions=64)
    engine._embedder = other
    engine.indexing.finish(other)
    engine.build_context("a third question")
    assert vector_models(store) == {embedder.key: messages, other.key: messages}


def test_without_an_embedder_hybrid_falls_back_to_words_and_says_so_once(make_engine) -> None:
    engine = make_engine("retrieval")
    first = engine.run_turn("My order id is ORD-7731.")
    second = engine.run_turn("Nice weather today.")
    assert NoEmbedder("retrieval") in first.notices
    assert NoEmbedder("retrieval") not in second.notices
    run_conversation(engine, ENGLISH_FILLER[:6])
    context = engine.build_context("Where is my order?")
    assert "My order id is ORD-7731." in recalled(context)
    method = context.part("recalled").reason.method
    assert (method.mode, method.no_embedder) == ("bm25", True)


def test_inspect_rows_say_why_each_candidate_was_kept_or_dropped(make_engine) -> None:
    engine = english_session(make_engine, "retrieval", mode="bm25")
    context = context_with(engine, "retrieval", "curious thing about fossils, wolves, comets",
                           mode="bm25", max_tokens=150, recent=2)
    kept = [r for r in context.recall if r["kept"]]
    dropped = [r for r in context.recall if not r["kept"]]
    assert kept and dropped
    assert {m.id for m in context.part("recalled").messages} == {r["id"] for r in kept}
    assert {r["why"] for r in dropped} <= {RecallVerdict.DOES_NOT_FIT.value,
                                           RecallVerdict.NO_ROOM.value}
    assert all(r["bm25"] >= 0 and r["dense"] is None for r in context.recall)


def test_replayed_transcripts_keep_their_times(make_engine, store) -> None:
    engine = make_engine("retrieval", mode="bm25")
    engine.replay_turn("hello", "hi", times=("2026-01-05T08:00:00+00:00",
                                            "2026-01-05T08:01:00+00:00"))
    assert [m.created_at for m in store.history.messages(engine.session.id)] == [
        "2026-01-05T08:00:00+00:00", "2026-01-05T08:01:00+00:00"]


REPLIES_ONLY = [("user", "hello there"), ("assistant", "the zebra password is kiwi"),
                *[(role, f"{role} small talk number {n}") for n in range(6)
                  for role in ("user", "assistant")]]
"""A conversation whose only match for 'zebra password?' is a reply."""


def asking(make_engine, lines: list[tuple[str, str]], text: str) -> ContextRequest:
    """What a retrieval session holding `lines` (role, text), imported, is asked: `text`."""
    engine = make_engine("retrieval")
    engine.store.history.import_messages(engine.session.id,
                                         [{"role": role, "content": said} for role, said in lines])
    return ContextRequest(history=engine.history(),
                          input=Message.counted("user", text, engine.counter),
                          counter=engine.counter, state=engine.state)


def by_words(request: ContextRequest, budget: int) -> Context:
    """Built by words alone within `budget` tokens: no recent turns, neighbours or sittings,
    so only ranking and room decide what is recalled."""
    return create_strategy("retrieval", {"mode": "bm25", "max_tokens": str(budget),
                                         "recent": "0", "smooth": "0",
                                         "sitting": "0"}).build(request)


@pytest.mark.parametrize("opened", [True, False])
def test_a_recalled_reply_comes_with_its_question_or_not_at_all(
    make_engine, opened: bool
) -> None:
    request = asking(make_engine, REPLIES_ONLY, "zebra password?")
    greeting, reply = request.history.turns(1, 1)[0].messages
    # Room for the reply alone, or for the reply and the question before it.
    budget = (request.counter.priming + request.input.tokens + reply.tokens
              + (greeting.tokens if opened else 0))
    context = by_words(request, budget)
    sent = [m for p in context.parts if p.kind != "system" for m in p.messages]
    assert sent[0].role == "user"
    texts = recalled(context)
    if opened:
        assert texts[:2] == ["hello there", "the zebra password is kiwi"]
        assert context.recall[0]["why"] == RecallVerdict.KEPT_AS_QUESTION.value
    else:
        assert "the zebra password is kiwi" not in texts
        assert any(r["why"] == RecallVerdict.REPLY_FIRST.value for r in context.recall)


def test_a_better_ranked_reply_keeps_its_question_and_a_weaker_match_makes_room(
    make_engine
) -> None:
    request = asking(make_engine, [
        ("user", "hello there"), ("assistant", "the zebra password is kiwi"),
        ("user", "small talk"), ("assistant", "more small talk"),
        ("user", "a password hint from the weather"), ("assistant", "noted"),
        ("user", "the password of the wifi is long"), ("assistant", "noted again")],
        "zebra password?")
    stored = {m.content: m for t in request.history.turns(1, 4) for m in t.messages}
    matches = ["the zebra password is kiwi", "a password hint from the weather",
               "the password of the wifi is long"]
    # Room for the three matches, not for the question of the best one beside them.
    budget = (request.counter.priming + request.input.tokens
              + sum(stored[t].tokens for t in matches))
    context = by_words(request, budget)
    texts = recalled(context)
    assert texts[:2] == ["hello there", "the zebra password is kiwi"]
    why = {r["id"]: r["why"] for r in context.recall}
    left = [t for t in matches[1:] if t not in texts]
    assert len(left) == 1
    assert why[stored[left[0]].id] == RecallVerdict.MADE_ROOM.value
    assert context.tokens <= budget


def test_a_weaker_reply_never_takes_a_better_match_s_place_for_its_question(
    make_engine
) -> None:
    """The oldest kept message is a reply ranked below the best match: room for its question
    is not made by dropping that match; the reply is left out instead."""
    request = asking(make_engine, [
        ("user", "what did the vet say"), ("assistant", "the zebra was fine, said the vet"),
        ("user", "small talk"), ("assistant", "more small talk"),
        ("user", "my zebra is called kiwi and loves kiwi fruit"), ("assistant", "cute")],
        "what is my zebra called, kiwi?")
    stored = {m.content: m for t in request.history.turns(1, 3) for m in t.messages}
    best = "my zebra is called kiwi and loves kiwi fruit"
    weaker = "the zebra was fine, said the vet"
    # Room for both matches, not for the weaker one's question beside them.
    budget = (request.counter.priming + request.input.tokens + stored[best].tokens
              + stored[weaker].tokens)
    context = by_words(request, budget)
    scores = {r["id"]: r["fused"] for r in context.recall}
    assert scores[stored[best].id] > scores[stored[weaker].id]
    why = {r["id"]: r["why"] for r in context.recall}
    assert recalled(context) == [best]
    assert why[stored[weaker].id] == RecallVerdict.REPLY_FIRST.value
    assert context.tokens <= budget


def test_each_recalled_message_says_which_route_brought_it(make_engine) -> None:
    from chatmem.memory.reasons import RecallRoute
    from chatmem.render.reasons import reason_text

    request = asking(make_engine, REPLIES_ONLY, "zebra password?")
    context = create_strategy("retrieval", {"mode": "bm25", "recent": "0", "smooth": "0.5",
                                            "sitting": "0"}).build(request)
    routes = {r["id"]: r.get("route") for r in context.recall if r["kept"]}
    by_text = {m.content: routes[m.id] for m in context.part("recalled").messages}
    assert by_text["the zebra password is kiwi"] == RecallRoute.WORDS.value
    assert by_text["hello there"] == RecallRoute.NEIGHBOUR.value
    reason = context.part("recalled").reason
    assert (reason.by_words, reason.by_neighbour) == (
        list(by_text.values()).count("words"), list(by_text.values()).count("neighbour"))
    assert reason.by_meaning == reason.by_time == 0
    assert "1 by words" in reason_text(reason)


@pytest.mark.parametrize(("params", "message"), [
    ({"mode": "vector"}, "parameter mode='vector' of strategy 'retrieval' must be one of "
                         "hybrid, bm25, dense"),
    ({"mmr": "1.5"}, "parameter mmr='1.5' of strategy 'retrieval' must be at most 1"),
    ({"dense_weight": "-0.1"}, "parameter dense_weight='-0.1' of strategy 'retrieval' must be "
                               "at least 0"),
])
def test_bad_parameters_name_the_parameter(params, message: str) -> None:
    from chatmem.errors import StrategyError

    with pytest.raises(StrategyError) as caught:
        create_strategy("retrieval", params)
    assert str(caught.value) == message


def test_vectors_are_stored_as_turns_go_by_and_a_build_only_reads_them(
    make_engine, store
) -> None:
    embedder = HashEmbedder()
    engine = make_engine("retrieval", embedder=embedder, recent=10)  # no recall yet
    for n in range(3):
        engine.run_turn(f"turn {n} about the delivery address")
    # Each turn stores what the backlog finished before it; the last one's is in flight.
    engine.indexing.finish(embedder)
    assert vector_models(store) == {embedder.key: 6}
    engine.run_turn("one more")
    before = vector_models(store)
    create_strategy("retrieval", {"recent": "0"}).build(engine.request("anything"))
    assert vector_models(store) == before


def test_the_candidates_packing_considers_grow_with_the_room_up_to_the_pool(
    make_engine,
) -> None:
    """About four candidates per message that fits (`pool_size`): reading, ranking and packing
    hundreds more than a 2,000-token room can hold was most of a build's work."""
    from chatmem.memory.packing import POOL, pool_size

    engine = make_engine("retrieval", mode="bm25")
    engine.store.history.import_messages(engine.session.id, [
        {"role": role, "content": f"Order ORD-{n}: 杭州 trip, {role} note {n}."}
        for n in range(300) for role in ("user", "assistant")])
    considered = {}
    for budget in (2000, 8000):
        context = context_with(engine, "retrieval", "which 杭州 order?", mode="bm25",
                               max_tokens=budget)
        part = context.part("recalled")
        assert part is not None
        # A recalled reply may bring its question along from outside the pool (+1).
        considered[budget] = part.reason.sent + part.reason.left
    assert pool_size(2000) < considered[8000] - 1 and considered[2000] <= pool_size(2000) + 1
    assert considered[8000] in (POOL, POOL + 1)


def test_a_word_another_conversation_says_all_the_time_is_still_found_where_this_one_said_it(
    make_engine,
) -> None:
    """Recall scores only the words rare in the whole index (their BM25 reads every entry
    they have). A name another conversation says in hundreds of messages was left out
    of this one's search too, so what this one said about it was never recalled."""
    from chatmem.store.recall import POSTINGS

    engine = make_engine("retrieval", mode="bm25")
    history = engine.store.history
    history.import_messages(engine.session.id, [
        {"role": "user", "content": "Alice said her flat is on Rue Oberkampf. 阿丽丝住在杭州。"},
        {"role": "assistant", "content": "Noted."},
        *({"role": role, "content": f"Trip day {n}: museums, food markets and a concert."}
          for n in range(150) for role in ("user", "assistant"))])
    other = make_engine("retrieval", mode="bm25")
    history.import_messages(other.session.id, [
        {"role": "user", "content": f"Alice and I planned garden bed {n}. 阿丽丝也来了。"}
        for n in range(POSTINGS // 2 + 50)])
    # This conversation goes on after the other: its messages come before and after it.
    history.import_messages(engine.session.id, [
        {"role": "user", "content": "And the last day: the Louvre."},
        {"role": "assistant", "content": "Booked."}])
    for question in ("Where does Alice live?", "阿丽丝住在哪里？"):
        context = context_with(engine, "retrieval", question, mode="bm25", max_tokens=300)
        assert recalled_turns(context)[:1] == [1], question
    # Where the conversation says it as often as the other, it is as common there.
    context = context_with(other, "retrieval", "Where does Alice live?", mode="bm25",
                           max_tokens=300)
    assert context.part("recalled") is None


@pytest.mark.parametrize("lines", [
    [f"Order {i} of the garden tools shipped on day {i}." for i in range(40)],
    [f"第{i}号订单的花园工具在第{i}天发出。" for i in range(40)],
])
def test_a_build_makes_no_python_call_per_recalled_message_an_earlier_build_made(
    make_engine, lines: list[str],
) -> None:
    # perf67: each recalled message cost three Python calls a build (message_at,
    # Candidates.message, said), though the message as sent was kept from the last build.
    called = {("retrieval.py", "message_at"), ("retrieval.py", "said"),
              ("recall_sources.py", "message")}

    engine = make_engine("retrieval", mode="bm25")
    run_conversation(engine, lines)
    question = "Which garden tools order shipped?" if lines[0].isascii() else "花园工具的订单？"
    first = context_with(engine, "retrieval", question, mode="bm25", later=0)
    names: list[str] = []

    def seen(frame, event: str, arg: object) -> None:  # type: ignore[no-untyped-def]
        code = frame.f_code
        if event == "call" and (code.co_filename.rsplit("/", 1)[-1], code.co_name) in called:
            names.append(code.co_name)

    sys.setprofile(seen)
    try:
        again = context_with(engine, "retrieval", question, mode="bm25", later=0)
    finally:
        sys.setprofile(None)
    assert len(recalled(first)) >= 10
    assert recalled(again) == recalled(first)
    assert names == []
