"""Strategy parameters typed as `key=value` text, read by one parser for the config file,
--strategy, --param and /strategy."""

from __future__ import annotations

import pytest

from chatmem.config.pairs import parse_pairs, split_params
from chatmem.config.schema import strategy_spec
from chatmem.errors import ConfigError, StrategyError
from chatmem.memory.spec import split_text


def test_pairs_split_at_the_first_equals_sign_with_spaces_trimmed() -> None:
    pairs = ["k=3", " top_k = 4 ", "prompt=a=b", "名字=小明"]
    assert parse_pairs(pairs, StrategyError) == {
        "k": "3", "top_k": "4", "prompt": "a=b", "名字": "小明",
    }


@pytest.mark.parametrize("bad", ["k", "=3", "  =3"])
def test_a_pair_without_a_key_fails_in_the_callers_words(bad: str) -> None:
    with pytest.raises(StrategyError) as caught:
        parse_pairs(["k=1", bad],
                    lambda pair: StrategyError(f"--param {pair!r} is not key=value"))
    assert str(caught.value) == f"--param {bad!r} is not key=value"


@pytest.mark.parametrize("text", [
    "window", " window : k=3 ", "window:k=3,,recent=2,", "window+entity:window.k=2,k=3",
    "retrieval:top_k= 4 ,名字=小明",
])
def test_the_config_and_the_registry_read_a_spec_alike(text: str) -> None:
    name, params = split_params(text, StrategyError)
    assert strategy_spec(text, "config.toml: key 'strategy'") == (name, params)
    names, registry_params = split_text(text)
    assert ("+".join(names), registry_params) == (name, params)


def test_a_bad_pair_is_a_config_error_in_the_config_and_a_strategy_error_elsewhere() -> None:
    with pytest.raises(ConfigError, match=r"^config.toml: key 'strategy': parameters must "
                                          r"be key=value, e.g. window:k=2, got '=2'$"):
        strategy_spec("window:=2", "config.toml: key 'strategy'")
    with pytest.raises(StrategyError, match=r"^strategy 'window:=2': parameters must be"):
        split_text("window:=2")
