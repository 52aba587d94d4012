"""`A+B`: parts of both strategies in the fixed order, deduplicated, one shared budget."""

from __future__ import annotations

import pytest
from fact_conversations import (
    ENGLISH_VALUES,
    context_with,
    english_session,
    facts_in,
    mixed_line,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from listed_history import ListHistory, scratch_state
from registered import STRATEGIES, create_strategy, open_session

from chatmem.config.settings import Settings
from chatmem.errors import StrategyError
from chatmem.memory import EXAMPLE_COMBINATIONS
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import PART_ORDER, Message, Part
from chatmem.memory.reasons import (
    DroppedTurns,
    Merged,
    NewestTurns,
    Recalled,
    SharedBudgetCut,
    StoredReason,
)
from chatmem.memory.shared_budget import fit_budget
from chatmem.tokens import counter_for_model


def test_parameters_are_addressed_per_part() -> None:
    combined = create_strategy("window+entity", {"window.k": "4", "entity.max_facts": 7})
    assert combined.name == "window+entity"
    assert dict(combined.params) == {"window.k": 4, "entity.k": 3, "entity.max_facts": 7}
    assert combined.describe_params() == "window.k=4 entity.k=3 entity.max_facts=7"
    # A name only one part has needs no prefix.
    assert create_strategy("window+retrieval", {"top_k": "2"}).params["retrieval.top_k"] == 2


@pytest.mark.parametrize(("spec", "params", "message"), [
    ("window+nope", {}, "unknown strategy 'nope' in 'window+nope' (valid parts: "),
    ("window+", {}, "unknown strategy '(empty)' in 'window+' (valid parts: "),
    ("window+window", {}, "'window+window' names the same strategy twice"),
    ("window+entity", {"tokens.max_tokens": "9"},
     "parameter 'tokens.max_tokens': 'tokens' is not part of 'window+entity' "
     "(parts: window, entity)"),
    ("window+entity", {"k": "2"},
     "parameter 'k' is ambiguous for 'window+entity'; address it as PART.NAME "
     "(valid: window.k, entity.k, entity.max_facts)"),
    ("window+entity", {"top_k": "2"}, "parameter 'top_k' is unknown for 'window+entity'"),
    ("window+entity", {"window.k": "many"},
     "parameter k='many' of strategy 'window' must be a whole number"),
])
def test_bad_combinations_are_clear_errors(spec, params, message) -> None:
    with pytest.raises(StrategyError) as caught:
        create_strategy(spec, params)
    assert str(caught.value).startswith(message)
    if "valid parts" in message:
        assert all(name in str(caught.value) for name in STRATEGIES)


def test_example_combinations_name_registered_strategies() -> None:
    assert {"window+entity", "summary-buffer+retrieval"} <= set(EXAMPLE_COMBINATIONS)
    for spec in EXAMPLE_COMBINATIONS:
        assert create_strategy(spec).name == spec
    assert set(EXAMPLE_COMBINATIONS) <= set(STRATEGIES.contract_names())


def test_parts_come_in_the_fixed_order_and_each_message_once(make_engine) -> None:
    engine = english_session(make_engine, "window+entity")
    context = context_with(engine, "entity+retrieval", "Where is my order?", **{
        "retrieval.recent": 4, "entity.k": 2, "retrieval.top_k": 2})
    kinds = [p.kind for p in context.parts]
    assert kinds == ["system", "facts", "recalled", "history", "input"]
    assert kinds == sorted(kinds, key=PART_ORDER.index)
    ids = [m.id for p in context.parts for m in p.messages if m.id is not None]
    assert len(ids) == len(set(ids))
    assert [m.turn for m in context.part("history").messages] == [36, 36, 37, 37, 38, 38, 39, 39]
    assert {m.turn for m in context.part("recalled").messages} == {2}
    assert facts_in(context)["order id"] == ("ORD-7731", "turn 2")
    assert context.dropped == (DroppedTurns((1, 35), recalled_turns=1),)


def test_history_wins_over_recall(make_engine) -> None:
    engine = english_session(make_engine, "buffer")
    question = "curious thing about volcanoes and fossils"
    alone = context_with(engine, "retrieval", question, recent=1)
    alone_turns = {m.turn for m in alone.part("recalled").messages}
    assert 6 in alone_turns and alone_turns & set(range(34, 39))
    context = context_with(engine, "window+retrieval", question,
                           **{"window.k": 6, "retrieval.recent": 1})
    history = {m.turn for m in context.part("history").messages}
    assert history == set(range(34, 40))
    recalled = {m.turn for m in context.part("recalled").messages}
    assert 6 in recalled and not history & recalled


def test_one_budget_is_shared_old_history_goes_before_a_relevant_recalled_turn(
    make_engine,
) -> None:
    engine = english_session(make_engine, "buffer")
    question = "curious thing about volcanoes"
    roomy = context_with(engine, "window+retrieval", question,
                         **{"window.k": 2, "retrieval.recent": 0})
    assert roomy.budget == 2000 and 6 in {m.turn for m in roomy.part("recalled").messages}
    alone = context_with(engine, "tokens", question, max_tokens=300)
    tight = context_with(engine, "tokens+retrieval", question,
                         **{"tokens.max_tokens": 300, "retrieval.recent": 0})
    assert tight.budget == 300 and tight.tokens <= 300 and not tight.warnings
    # Turn 6 is about volcanoes: it stays; the oldest recent turns make room for it.
    assert 6 in {m.turn for m in tight.part("recalled").messages}
    kept = [m.turn for m in tight.part("history").messages]
    before = [m.turn for m in alone.part("history").messages]
    assert kept and kept == before[len(before) - len(kept):] and len(kept) < len(before)
    cut = sorted(set(before) - set(kept))
    (shared,) = tight.dropped[1:]  # recall's messages in the turns cut are recalled still
    assert (shared.history, shared.budget) == ((cut[0], cut[-1]), 300)
    lowest = min(score for _, score in tight.part("recalled").scores)
    assert all(score <= lowest for _, score in shared.recalled)  # the least relevant go
    # The reasons say what was sent: the turns kept of those tokens chose, and why the
    # others went; recall names the budget it filled, the shared one.
    chosen = alone.part("history").reason
    assert tight.part("history").reason == NewestTurns(
        "tokens", "max_tokens", 300, (kept[0], kept[-1]), chosen.dropped, chosen.to_fit,
        cut=SharedBudgetCut((cut[0], cut[-1]), (), 300))
    recalled = tight.part("recalled")
    assert isinstance(recalled.reason, Recalled) and recalled.reason.shared
    assert recalled.reason.max_tokens == 300 and recalled.reason.sent == len(recalled.messages)


def test_the_recalled_turn_that_answers_the_question_outlives_recent_small_talk(
    make_engine,
) -> None:
    """A6: summary-buffer+retrieval after 160 mixed turns, asked about booking BK-1011.

    The same context, read again after a review's run: the recalled part said
    'max_tokens=2000: 50 of 240 earlier messages' while it sent 28 in a budget of 1,000, and
    the history part 'turns 115–121' while it sent turn 121 (one 160-turn conversation for
    both: it is most of this module's time, on PostgreSQL above all)."""
    engine = make_engine("summary-buffer+retrieval", **{"summary-buffer.max_tokens": 500})
    for i in range(1, 161):
        assert engine.run_turn(mixed_line(i)).status == "ok"
    context = engine.build_context("What was booking BK-1011 about?")
    assert context.budget == 500 and context.tokens <= 500 and not context.warnings
    recalled = context.part("recalled")
    assert recalled is not None
    assert {11, 17} <= {m.turn for m in recalled.messages}  # the booking and its question
    assert any("BK-1011 and the price is 77 EUR" in m.content for m in recalled.messages)
    history = [m.turn for m in context.part("history").messages]
    assert history and history[-1] == 160  # the newest turn always stays
    # Recall fills its own budget too, so the least relevant recalled turns go as well.
    cut = context.dropped[-1]
    assert isinstance(cut, SharedBudgetCut) and len(context.dropped) == 2
    assert cut.history is not None and cut.budget == 500
    assert cut.history[1] < history[0] and all(n not in history for n, _ in cut.recalled)
    # After the shared cut, the reasons say what was sent.
    assert isinstance(cut, SharedBudgetCut) and cut.recalled and cut.history
    reason = recalled.reason
    assert isinstance(reason, Recalled)
    assert (reason.max_tokens, reason.shared) == (500, True)  # not retrieval's own 2,000
    assert reason.sent == len(recalled.messages)
    assert reason.turns == len({m.turn for m in recalled.messages})
    kept = {r["id"] for r in context.recall if r["kept"]}
    assert {m.id for m in recalled.messages} <= kept
    fused = [r["fused"] for r in context.recall if r["kept"]]
    assert (round(reason.low, 4), round(reason.high, 4)) == (min(fused), max(fused))
    assert reason.left >= len(cut.recalled)
    history_part = context.part("history")
    sent = sorted({m.turn for m in history_part.messages})
    assert isinstance(history_part.reason, Merged)
    mine, recall_own = history_part.reason.reasons
    assert isinstance(mine, NewestTurns) and mine.strategy == "summary-buffer"
    assert mine.turns == (sent[0], sent[-1])
    assert mine.cut == SharedBudgetCut(cut.history, (), 500)
    # "dropped turns 1–159 except N recalled messages": N those the recalled part sends.
    assert isinstance(recall_own, NewestTurns) and recall_own.strategy == "retrieval"
    assert recall_own.turns == (160, 160) and recall_own.cut is None
    assert recall_own.recalled == len(recalled.messages)


def turn_messages(turn: int, tokens: int) -> tuple[Message, ...]:
    return (Message("user", f"question {turn}", tokens // 2, turn * 2, turn),
            Message("assistant", f"answer {turn}", tokens - tokens // 2, turn * 2 + 1, turn))


def fitting(history: list[int], recalled: dict[int, float], budget: int, size: int = 20):
    counter = counter_for_model(None, exact=True)
    request = ContextRequest(ListHistory(), Message("user", "now?", 5), counter,
                             state=scratch_state())
    parts = [
        Part("recalled", tuple(m for t in sorted(recalled) for m in turn_messages(t, size)),
             StoredReason("recalled"), tuple(sorted(recalled.items()))),
        Part("history", tuple(m for t in history for m in turn_messages(t, size)),
             StoredReason("history")),
    ]
    return fit_budget(request, [p for p in parts if p.messages], budget)


def test_trimming_takes_old_history_then_the_least_relevant_recalled_turns() -> None:
    # Fixed: 5 input + 3 priming = 8. Each turn is 20 tokens.
    parts, history_cut, recalled_cut = fitting([5, 6, 7, 8], {1: 2.0, 2: 9.0, 3: 5.0}, 8 + 60)
    assert history_cut == [5, 6, 7]
    assert recalled_cut == [(1, 2.0)]
    assert [sorted({m.turn for m in p.messages}) for p in parts] == [[2, 3], [8]]
    assert parts[0].scores == ((2, 9.0), (3, 5.0))


def test_cutting_a_recalled_question_takes_the_reply_that_would_open_the_part() -> None:
    # Recall keeps single messages: turn 1's question, then turn 2's reply without its own.
    counter = counter_for_model(None, exact=True)
    request = ContextRequest(ListHistory(), Message("user", "now?", 5), counter,
                             state=scratch_state())
    recalled = (turn_messages(1, 20)[0], turn_messages(2, 20)[1], *turn_messages(3, 20))
    parts = [Part("recalled", recalled, "recalled", ((1, 1.0), (2, 3.0), (3, 5.0))),
             Part("history", turn_messages(9, 20), "history")]
    parts, history_cut, recalled_cut = fit_budget(request, parts, 8 + 20 + 20 + 10)
    assert history_cut == []
    # Turns 3 and 2 fit, but turn 2's reply would open the part: it is passed over, and
    # turn 1's question takes the room it leaves.
    assert recalled_cut == [(2, 3.0)]
    assert [(m.role, m.turn) for m in parts[0].messages] == [
        ("user", 1), ("user", 3), ("assistant", 3)]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=8, unique=True),
       st.dictionaries(st.integers(41, 60), st.floats(0, 20), max_size=5),
       st.integers(0, 400))
def test_trimming_keeps_the_newest_history_turn_and_the_best_recalled_turns(
    history, recalled, budget,
) -> None:
    """Within the budget whenever the input fits (the README's promise for every strategy):
    the oldest history first, then the least relevant recalled turns, and only then the
    newest history turn."""
    history = sorted(history)
    parts, history_cut, recalled_cut = fitting(history, recalled, budget)
    by_kind = {p.kind: p for p in parts}
    kept_history = sorted({m.turn for m in by_kind["history"].messages}) \
        if "history" in by_kind else []
    assert kept_history == history[len(history_cut):]  # oldest first, the newest last
    kept_recalled = {m.turn for m in by_kind["recalled"].messages} if "recalled" in by_kind \
        else set()
    assert kept_recalled | {n for n, _ in recalled_cut} == set(recalled)
    if recalled_cut:  # recall is trimmed only once history is down to its newest turn
        assert len(kept_history) <= 1
        assert max(s for _, s in recalled_cut) <= min(
            (recalled[n] for n in kept_recalled), default=float("inf"))
    if not kept_history:  # the newest turn goes only once recall is gone too
        assert not kept_recalled
    total = 8 + sum(p.tokens for p in parts)
    assert total <= budget or budget < 8
    if history_cut and not recalled_cut:  # no turn more than needed: the last one cut did not fit
        assert total + 20 > budget


def test_a_recalled_turn_too_big_for_the_room_leaves_it_to_the_turns_that_fit() -> None:
    """The review's shape (c-docs at 1,000 tokens): summary and pins leave 584 tokens; the
    best recalled turn, a 679-token email, cannot fit. It alone goes: the recent turns and
    the small recalled turns cut to make room for it all came back (435 of 1,000 sent)."""
    counter = counter_for_model(None, exact=True)
    request = ContextRequest(ListHistory(), Message("user", "the door code?", 18), counter,
                             system="Read my documents.", state=scratch_state())
    fixed = 8 + 18 + request.system_message.tokens
    email = (Message("user", "From: Priya …", 679, 4, 2),)
    small = tuple(m for t in (1, 13, 44, 50, 51, 52, 55, 58, 59, 60, 61, 62)
                  for m in turn_messages(t, 14))
    recent = tuple(m for t in range(96, 103) for m in turn_messages(t, 30))
    scores = ((2, 0.71), *((t, 0.25 + t / 1000) for t in (1, 13, 44, 50, 51, 52, 55, 58,
                                                             59, 60, 61, 62)))
    parts = [Part("summary", (Message("system", "summary", 136),), StoredReason("summary")),
             Part("facts", (Message("system", "pins", 247),), StoredReason("pins")),
             Part("recalled", tuple(sorted(email + small, key=lambda m: (m.turn, m.id))),
                  StoredReason("recalled"), scores),
             Part("history", recent, StoredReason("history"))]
    budget = fixed + 136 + 247 + 584
    parts, history_cut, recalled_cut = fit_budget(request, parts, budget)
    assert history_cut == [] and recalled_cut == [(2, 0.71)]
    assert [p.kind for p in parts] == ["summary", "facts", "recalled", "history"]
    assert len(parts[2].messages) == 24 and len(parts[3].messages) == 14
    assert fixed + sum(p.tokens for p in parts) == budget - 584 + 12 * 14 + 7 * 30


def sized_turn(turn: int, tokens: int, reply_only: bool = False) -> tuple[Message, ...]:
    if reply_only:
        return (Message("assistant", f"answer {turn}", tokens, turn * 2 + 1, turn),)
    return turn_messages(turn, tokens)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(41, 80), st.integers(2, 150), max_size=8),
       st.dictionaries(st.integers(1, 40),
                       st.tuples(st.integers(1, 150), st.floats(0, 20), st.booleans()),
                       max_size=7),
       st.integers(0, 600))
def test_the_shared_fit_leaves_no_room_a_left_out_turn_would_fit(
    history, recalled, budget,
) -> None:
    """Turns of any size: a turn is left out only when it did not fit in the room the turns
    before it in priority left (the newest history turn, recalled turns best first, older
    history newest first), so no room is left that one would fit in; history stays the
    newest turns, whole, and the recalled part never opens on a reply."""
    counter = counter_for_model(None, exact=True)
    request = ContextRequest(ListHistory(), Message("user", "now?", 5), counter,
                             state=scratch_state())
    size = {**history, **{n: tokens for n, (tokens, _, _) in recalled.items()}}
    reply_only = {n for n, (_, _, reply) in recalled.items() if reply}
    score = {n: s for n, (_, s, _) in recalled.items()}
    parts = [p for p in (
        Part("recalled", tuple(m for n in sorted(recalled)
                               for m in sized_turn(n, size[n], n in reply_only)),
             StoredReason("recalled"), tuple(sorted(score.items()))),
        Part("history", tuple(m for n in sorted(history) for m in sized_turn(n, size[n])),
             StoredReason("history"))) if p.messages]
    fitted, history_cut, recalled_cut = fit_budget(request, parts, budget)
    by_kind = {p.kind: p for p in fitted}
    kept_history = sorted({m.turn for m in by_kind["history"].messages}) \
        if "history" in by_kind else []
    kept_recalled = sorted({m.turn for m in by_kind["recalled"].messages}) \
        if "recalled" in by_kind else []
    assert history_cut == sorted(set(history) - set(kept_history))
    assert recalled_cut == sorted((n, score[n]) for n in set(recalled) - set(kept_recalled))
    assert kept_history == sorted(history)[len(history_cut):]  # the newest, whole
    if kept_recalled:
        assert by_kind["recalled"].messages[0].role == "user"
    total = 8 + sum(p.tokens for p in fitted)
    assert total <= budget or (budget < 8 and total == 8)
    left = budget - total
    newest = [max(history)] if history else []
    priority = [*newest, *sorted(recalled, key=lambda n: (score[n], n), reverse=True),
                *sorted(set(history) - set(newest), reverse=True)]
    kept = set(kept_history) | set(kept_recalled)
    for at, n in enumerate(priority):
        if n in kept or (n in history and history_cut and n != max(history_cut)):
            continue  # older history behind a gap is not the next in line
        after = sum(size[m] for m in priority[at + 1:] if m in kept)
        if n in reply_only and not any(k < n for k in kept_recalled):
            continue  # it would open the recalled part on a reply
        if n in reply_only:  # passed over once as the opener, it is put back if it fits
            assert size[n] > left, (n, left)
        else:
            assert size[n] > left + after, (n, left, after)


@pytest.mark.parametrize(("spec", "params"), [
    ("buffer+tokens", {"tokens.max_tokens": 60}),
    ("tokens+retrieval", {"tokens.max_tokens": 80, "retrieval.max_tokens": 60}),
])
def test_a_combination_stays_within_its_shared_budget_when_the_input_fits(
        make_engine, spec: str, params: dict[str, int]) -> None:
    """A member with a budget of its own larger than the shared one kept a turn that alone
    exceeded it, and the combination sent 97 tokens of 60 (the review's run)."""
    engine = make_engine(spec, **params)
    for line in ("我们五月去杭州旅行，预算五千元，请帮我安排行程。",
                 "My order is ORD-7731 and the sofa is teal; please keep that in mind.",
                 "请记住：酒店是琉璃客栈，三月十五日入住，两晚。"):
        result = engine.run_turn(line)
        assert result.context.tokens <= result.context.budget, result.context.warnings
    context = engine.build_context("还有什么要注意的？")
    assert context.tokens <= context.budget == 60 and not context.warnings


def test_update_runs_every_part_and_the_session_keeps_its_parameters(store, scripted) -> None:
    settings = Settings(system="Be brief.")
    engine = open_session(store, settings, scripted, "combo", strategy="window+entity",
                          params={"window.k": "1", "entity.k": "1"})
    engine.run_turn("My order id is ORD-7731.")
    engine.run_turn("Thanks!")
    assert facts_in(engine.build_context("and?"))["order id"] == ("ORD-7731", "turn 1")
    assert scripted.calls_by_purpose["facts"] == 2
    resumed = open_session(store, settings, scripted, "combo")
    assert resumed.strategy.name == "window+entity"
    assert resumed.strategy.params["window.k"] == 1
    assert [m.turn for m in resumed.build_context("and?").part("history").messages] == [2, 2]


def test_all_facts_survive_in_window_plus_entity(make_engine) -> None:
    engine = english_session(make_engine, "window+entity", **{"window.k": 3})
    facts = facts_in(engine.build_context("Anything else?"))
    assert {k: v for k, (v, _) in facts.items()} == {k: v for k, (v, _) in ENGLISH_VALUES.items()}


def test_the_short_parameter_form_names_only_changed_parameters() -> None:
    make = create_strategy

    assert make("window", {}).describe_params(changed_only=True) == ""
    assert make("window", {"k": "3"}).describe_params(changed_only=True) == "k=3"
    assert make("window", {"k": "3"}).describe_params() == "k=3"
    combo = make("window+entity", {"window.k": "2"})
    assert combo.describe_params(changed_only=True) == "window.k=2"
    assert combo.describe_params().startswith("window.k=2 entity.k=3")
