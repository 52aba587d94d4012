"""Strategy parameters typed as text: `k=3` pairs, and their one-line errors."""

from __future__ import annotations

import pytest

from chatmem.errors import StrategyError
from chatmem.memory import changed_params, contract_strategy_names, create_strategy
from chatmem.memory.params import parse_param_pairs


def test_pairs_split_at_the_first_equals_sign_with_spaces_trimmed() -> None:
    pairs = ["k=3", " top_k = 4 ", "prompt=a=b", "名字=小明"]
    assert parse_param_pairs(pairs, str) == {
        "k": "3", "top_k": "4", "prompt": "a=b", "名字": "小明",
    }


@pytest.mark.parametrize("bad", ["k", "=3", "  =3"])
def test_a_pair_without_a_key_fails_in_the_callers_words(bad: str) -> None:
    with pytest.raises(StrategyError) as caught:
        parse_param_pairs(["k=1", bad], lambda pair: f"--param {pair!r} is not key=value")
    assert str(caught.value) == f"--param {bad!r} is not key=value"


@pytest.mark.parametrize("spec", contract_strategy_names())
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
