"""`A+B`: parts of both strategies in the fixed order, deduplicated, one shared budget."""

from __future__ import annotations

import pytest
from fact_conversations import ENGLISH_VALUES, context_with, english_session, facts_in

from chatmem.config import Settings
from chatmem.engine import open_session
from chatmem.errors import StrategyError
from chatmem.memory import EXAMPLE_COMBINATIONS, REGISTRY, create_strategy
from chatmem.memory.base import PART_ORDER


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
        assert all(name in str(caught.value) for name in REGISTRY)


def test_example_combinations_name_registered_strategies() -> None:
    assert {"window+entity", "summary-buffer+retrieval"} <= set(EXAMPLE_COMBINATIONS)
    for spec in EXAMPLE_COMBINATIONS:
        if all(part in REGISTRY for part in spec.split("+")):
            assert create_strategy(spec).name == spec


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
    assert context.dropped == "dropped turns 1–35 (1 recalled)"


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


def test_one_budget_is_shared_recall_goes_first(make_engine) -> None:
    engine = english_session(make_engine, "buffer")
    question = "curious thing about volcanoes"
    roomy = context_with(engine, "window+retrieval", question,
                         **{"window.k": 2, "retrieval.recent": 0})
    assert roomy.budget == 4000 and 6 in {m.turn for m in roomy.part("recalled").messages}
    alone = context_with(engine, "tokens", question, max_tokens=300)
    tight = context_with(engine, "tokens+retrieval", question,
                         **{"tokens.max_tokens": 300, "retrieval.recent": 0})
    assert tight.budget == 300 and tight.tokens <= 300 and not tight.warnings
    assert tight.part("recalled") is None
    assert tight.part("history") == alone.part("history")
    assert "turn 6" in tight.dropped and "left out to fit the shared budget of 300" in tight.dropped


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
    from chatmem.memory import create_strategy as make

    assert make("window", {}).describe_params(changed_only=True) == ""
    assert make("window", {"k": "3"}).describe_params(changed_only=True) == "k=3"
    assert make("window", {"k": "3"}).describe_params() == "k=3"
    combo = make("window+entity", {"window.k": "2"})
    assert combo.describe_params(changed_only=True) == "window.k=2"
    assert combo.describe_params().startswith("window.k=2 entity.k=3")
