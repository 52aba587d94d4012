"""A context's warnings are stored with the turn as values and read back as the same values."""

from __future__ import annotations

import pytest

from chatmem.context_warnings import (
    ContextWarning,
    EmbeddingFailed,
    OverBudget,
    StoredWarning,
    SummaryBehind,
    warning_from_json,
    warning_json,
)
from chatmem.memory.context import Context, Message, Part

WARNINGS: list[ContextWarning] = [OverBudget(5_120, 4_000), OverBudget(30, 20, fixed=True),
                                  SummaryBehind(3, 9), EmbeddingFailed("HTTP 500 服务器错误")]


def context(*warnings: ContextWarning) -> Context:
    return Context((Part("input", (Message("user", "你好", 3),), "the new user input"),),
                   budget=4_000, warnings=warnings)


@pytest.mark.parametrize("warning", WARNINGS)
def test_each_warning_is_stored_by_kind_and_read_back_equal(warning: ContextWarning) -> None:
    stored = warning_json(warning)
    assert isinstance(stored, dict) and stored["kind"]
    assert warning_from_json(stored) == warning


def test_a_context_round_trips_its_warnings() -> None:
    original = context(*WARNINGS)
    assert Context.from_json(original.to_json()).warnings == tuple(WARNINGS)
    assert original.to_json()["warnings"][0] == {"kind": "over_budget", "tokens": 5_120,
                                                 "budget": 4_000, "fixed": False,
                                                 "attached": False}


def test_warnings_stored_as_text_by_an_older_version_come_back_as_text() -> None:
    text = "context is 5,120 tokens, over the budget of 4,000"
    data = {**context().to_json(), "warnings": [text]}
    assert Context.from_json(data).warnings == (StoredWarning(text),)
    assert Context.from_json(Context.from_json(data).to_json()).warnings == (StoredWarning(text),)


def test_a_warning_of_an_unknown_kind_or_shape_is_kept_not_dropped() -> None:
    assert isinstance(warning_from_json({"kind": "from_the_future", "n": 1}), StoredWarning)
    assert isinstance(warning_from_json({"kind": "over_budget", "tokens": 1}), StoredWarning)
