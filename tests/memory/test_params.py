"""Strategy parameters: declared once, parsed, checked, and their one-line errors."""

from __future__ import annotations

import dataclasses

import pytest
from registered import STRATEGIES, create_strategy

from chatmem.memory.params import declared_params

changed_params = STRATEGIES.changed_params


@pytest.mark.parametrize("spec", STRATEGIES.contract_names())
def test_changed_params_are_those_that_differ_from_the_defaults(spec: str) -> None:
    defaults = create_strategy(spec)
    assert changed_params(spec, defaults.params) == {}
    assert changed_params(spec, {}) == {}
    whole = [(k, v) for k, v in defaults.params.items()
             if isinstance(v, int) and not isinstance(v, bool)]
    for name, value in whole[:1]:  # buffer has no parameter
        assert changed_params(spec, {name: value + 1}) == {name: value + 1}


def test_changed_params_of_a_strategy_that_no_longer_builds_are_all_of_them() -> None:
    assert changed_params("gone", {"k": 2}) == {"k": 2}


def test_parsed_parameters_arrive_typed_as_the_strategys_dataclass() -> None:
    from chatmem.memory.retrieval import RetrievalParams, RetrievalStrategy

    strategy = create_strategy("retrieval", {"top_k": "3", "mmr": "1", "mode": "bm25"})
    assert isinstance(strategy, RetrievalStrategy)
    assert strategy.options == RetrievalParams(top_k=3, mmr=1.0, mode="bm25")
    assert isinstance(strategy.options.mmr, float)
    assert dict(strategy.params) == dataclasses.asdict(strategy.options)


def test_declared_params_follow_the_dataclass_fields_in_order() -> None:
    from chatmem.memory.summary_buffer import SummaryBufferParams, SummaryBufferStrategy

    declared = declared_params(SummaryBufferParams)
    assert [(p.name, p.type, p.default) for p in declared] == [
        ("max_tokens", int, 2000), ("summary_max_tokens", int, 256), ("prune_to", float, 0.5)]
    assert (declared[2].minimum, declared[2].maximum) == (0.0, 1.0)
    assert declared == SummaryBufferStrategy.PARAMS


def test_a_field_not_declared_with_param_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Undeclared:
        k: int = 3

    with pytest.raises(TypeError, match=r"Undeclared\.k"):
        declared_params(Undeclared)


def test_full_width_numbers_read_as_an_input_method_types_them() -> None:
    strategy = create_strategy("retrieval", {"top_k": "３", "mmr": "０．５"})
    assert (strategy.options.top_k, strategy.options.mmr) == (3, 0.5)



@pytest.mark.parametrize(("spec", "params", "way", "works"), [
    # -s window:k=1+entity read `1+entity` as k's value ("must be a whole number")
    ("window:k=1+entity", {}, "window+entity:window.k=1", ("window+entity:window.k=1", {})),
    ("window:k=1+summary-buffer:max_tokens=90", {},
     "window+summary-buffer:window.k=1,summary-buffer.max_tokens=90",
     ("window+summary-buffer:window.k=1,summary-buffer.max_tokens=90", {})),
    # --param window:k=2 said only "unknown parameter 'window:k'"
    ("window", {"window:k": "2"}, "k=2", ("window", {"k": "2"})),
    ("window+entity", {"window:k": "2"}, "window.k=2", ("window+entity", {"window.k": "2"})),
])
def test_a_near_miss_spelling_of_parameters_says_the_way_that_works(
        spec: str, params: dict[str, str], way: str,
        works: tuple[str, dict[str, str]]) -> None:
    from chatmem.errors import StrategyError

    with pytest.raises(StrategyError) as refused:
        STRATEGIES.parse(spec, params)
    assert way in str(refused.value)
    assert STRATEGIES.parse(*works).params["window.k" if "+" in works[0] else "k"] in ("1", "2")
