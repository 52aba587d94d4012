"""Table cells of replay and eval, decided once for the terminal (compare) and HTML (report).

Each function returns the text and a `Grade`; the terminal turns the grade into a
colour, the report into a CSS class.
"""

from __future__ import annotations

from enum import Enum


class Grade(Enum):
    GOOD = "good"
    MID = "mid"
    BAD = "bad"
    NONE = "muted"
    """Nothing to grade: a probe whose every expectation was left out (--regenerate)."""


MISSING = "–"
"""What a cell shows when there is no value (no probes, no turns)."""


def number(value: float | None, digits: int = 0) -> str:
    """`12,345` or `1,234.5`; MISSING for None."""
    return MISSING if value is None else f"{value:,.{digits}f}"


def recall_cell(value: float) -> tuple[str, Grade]:
    """`0.67`, graded: all found is good, at least half is mid, less is bad."""
    grade = Grade.GOOD if value >= 0.999 else Grade.MID if value >= 0.5 else Grade.BAD
    return f"{value:.2f}", grade


def probe_cell(found: int, expected: int) -> tuple[str, Grade]:
    """✓ when a probe found everything it expected, ✗ when nothing, else `found/expected`;
    MISSING when it expected nothing (its expectations were replies --regenerate replaced):
    ✓ would say it passed where nothing was measured."""
    if expected == 0:
        return MISSING, Grade.NONE
    if found == expected:
        return "✓", Grade.GOOD
    if found == 0:
        return "✗", Grade.BAD
    return f"{found}/{expected}", Grade.MID
