"""chatmem.testing.check_strategy, as a plugin author's test calls it: it passes a strategy
keeping the contract and fails, naming the rule, one that breaks it."""

from __future__ import annotations

import pytest
from plugin_site import Install
from test_contract import COUNTS

from chatmem.testing import check_strategy


def test_check_strategy_passes_a_plugin_strategy_keeping_the_contract(
        installed: Install) -> None:
    installed("chatmem-counts", "chatmem_counts", COUNTS)
    assert check_strategy("counts", examples=3, combined=2) is None


@pytest.mark.parametrize(("name", "caught"), [
    ("one-step", "one catch-up update did not rebuild"),
    ("writes-state", "a build changed its state"),
])
def test_check_strategy_fails_a_plugin_strategy_breaking_a_rule(
        installed: Install, name: str, caught: str) -> None:
    installed("chatmem-counts", "chatmem_counts", COUNTS)
    with pytest.raises(AssertionError, match=caught):
        check_strategy(name, examples=2, combined=0)
