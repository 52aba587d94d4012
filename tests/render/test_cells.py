"""The cells replay and eval tables share between the terminal and the HTML report."""

from __future__ import annotations

import pytest

from chatmem.evaluation.scoring import lower_recall
from chatmem.render.cells import MISSING, Grade, number, probe_cell, recall_cell


def test_numbers_group_thousands_and_a_missing_value_is_a_dash() -> None:
    assert (number(12_345), number(1_234.56, 1), number(None)) == ("12,345", "1,234.6", MISSING)


@pytest.mark.parametrize(("value", "cell"), [
    (1.0, ("1.00", Grade.GOOD)), (0.9991, ("1.00", Grade.GOOD)), (0.75, ("0.75", Grade.MID)),
    (0.5, ("0.50", Grade.MID)), (0.4999, ("0.50", Grade.BAD)), (0.0, ("0.00", Grade.BAD)),
])
def test_recall_is_graded_all_half_or_less(value: float, cell: tuple[str, Grade]) -> None:
    assert recall_cell(value) == cell


def test_a_probe_cell_counts_what_was_found() -> None:
    assert probe_cell(3, 3) == ("✓", Grade.GOOD)
    assert probe_cell(0, 3) == ("✗", Grade.BAD)
    assert probe_cell(2, 3) == ("2/3", Grade.MID)


def test_a_probe_that_expected_nothing_is_not_a_pass() -> None:
    # --regenerate leaves out expectations that were replies it replaced: 0 of 0 measured.
    assert probe_cell(0, 0) == (MISSING, Grade.NONE)


def test_the_lower_recall_ignores_a_missing_one() -> None:
    assert lower_recall(0.5, 0.75) == 0.5
    assert lower_recall(None, 0.75) == 0.75
    assert lower_recall(None, None) is None
