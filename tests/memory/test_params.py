"""Strategy parameters typed as text: `k=3` pairs, and their one-line errors."""

from __future__ import annotations

import pytest

from chatmem.errors import StrategyError
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
