"""`eval DIR`'s terminal table: every number whole at any width, labels never cut."""

from __future__ import annotations

import io

import pytest
from rich.cells import cell_len
from rich.console import Console

from chatmem.evaluation.corpus import StrategyTotals
from chatmem.render.corpus import corpus_table

TOTALS = [
    StrategyTotals("retrieval mode=bm25", 3, 28, 25, 24, 33, 32, 0.94, 1608.46, 2000, 1476.9),
    StrategyTotals("summary-buffer+retrieval max_tokens=300", 3, 28, 25, 0, 33, 13, 0.0,
                   236.8, 281, 236.9),
    StrategyTotals("摘要 window k=2", 3, 28, 25, 5, 33, 8, 0.13, 223.1, 327, 234.6),
]
NUMBERS = ["1,608.5", "2,000", "1,476.9", "236.8", "281", "236.9", "0.96", "0.97", "0.94",
           "0.00", "0.39", "223.1", "327", "234.6", "0.20", "0.24", "0.13"]


def show(width: int) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(corpus_table(TOTALS, "eval of 3 transcripts in sessions"))
    return console.export_text()


@pytest.mark.parametrize("width", [40, 60, 80, 100, 160])
def test_every_number_and_label_word_shows_whole_within_the_width(width: int) -> None:
    out = show(width)
    assert all(cell_len(line) <= width for line in out.splitlines())
    assert "…" not in out
    words = out.split()
    assert all(n in words for n in NUMBERS), out
    for label in ("retrieval", "mode=bm25", "max_tokens=300", "摘要", "k=2"):
        assert label in out


def test_a_wide_terminal_gets_one_row_per_strategy() -> None:
    rows = [line for line in show(160).splitlines() if "1,608.5" in line or "236.9" in line]
    assert len(rows) == 2 and "retrieval mode=bm25" in rows[0]
