"""What completes a strategy spec being typed, for --strategy in a shell and /strategy in the
REPL alike: names, `A+B`, parameters after the colon, values after `=`."""

from __future__ import annotations

from registered import STRATEGIES

from chatmem.memory.spec import StrategySpec
from chatmem.memory.spec_candidates import spec_candidates


def test_a_value_completes_after_the_equals_sign_without_a_strategy_in_use() -> None:
    # Once only the REPL offered values; --strategy in a shell stopped at the name.
    assert spec_candidates("window:k=", STRATEGIES) == [
        ("window:k=5", "default; a whole number, 0 or more")]
    assert [v for v, _ in spec_candidates("retrieval:top_k=3,mode=d", STRATEGIES)] == [
        "retrieval:top_k=3,mode=dense"]
    assert [v for v, _ in spec_candidates("window+entity:entity.k=", STRATEGIES)] == [
        "window+entity:entity.k=3"]
    assert spec_candidates("nosuch:k=", STRATEGIES) == []
    assert spec_candidates("window:nosuch=", STRATEGIES) == []


def test_the_value_in_use_comes_first_for_the_strategy_in_use_only() -> None:
    in_use = StrategySpec.single("window", {"k": 3})
    assert spec_candidates("window:k=", STRATEGIES, in_use) == [
        ("window:k=3", "in use; a whole number, 0 or more"),
        ("window:k=5", "default; a whole number, 0 or more")]
    assert [v for v, _ in spec_candidates("window+entity:window.k=", STRATEGIES, in_use)] == [
        "window+entity:window.k=5"]


def test_names_and_parameters_still_complete_before_a_value() -> None:
    assert ("window+entity", STRATEGIES["entity"].description) in spec_candidates(
        "window+e", STRATEGIES)
    assert [v for v, _ in spec_candidates("window:", STRATEGIES)] == ["window:k="]
    assert [v for v, _ in spec_candidates("retrieval:top_k=3,", STRATEGIES)] == [
        f"retrieval:top_k=3,{p.name}=" for p in STRATEGIES["retrieval"].PARAMS
        if p.name != "top_k"]
