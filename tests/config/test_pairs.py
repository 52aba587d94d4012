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


@pytest.mark.parametrize(("typed", "meant"), [
    ("window：k=2", "window:k=2"),
    ("window:k＝２", "window:k=２"),
    ("window＋entity：window.k＝2，k＝3", "window+entity:window.k=2,k=3"),
    ("retrieval：top_k = 4 ， 名字＝小明", "retrieval:top_k = 4 , 名字=小明"),
])
def test_what_a_chinese_input_method_types_reads_as_the_ascii_separators(
        typed: str, meant: str) -> None:
    assert split_text(typed) == split_text(meant)
    # The config hands the name on as typed, for the registry to split at ＋ as at +.
    params = split_params(meant, StrategyError)[1]
    assert split_params(typed, StrategyError)[1] == params
    assert strategy_spec(typed, "config.toml: key 'strategy'")[1] == params
    assert parse_pairs(["k＝３", "名字＝a=b"], StrategyError) == {"k": "３", "名字": "a=b"}


def test_a_full_width_comma_inside_a_text_value_stays_in_it() -> None:
    # Only a ， that a key= follows starts the next pair: 简洁，友好 is one value.
    assert split_params("x:风格=简洁，友好，k＝2", StrategyError) == (
        "x", {"风格": "简洁，友好", "k": "2"})
