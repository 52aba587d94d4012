"""`eval DIR`: a line per transcript as it finishes, then one row per strategy for all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from chatmem.render.cells import MISSING, number
from chatmem.render.compare import _recall, series_style

if TYPE_CHECKING:
    from chatmem.evaluation.corpus import StrategyTotals
    from chatmem.evaluation.scoring import StrategyRun


def transcript_lines(name: str, runs: Sequence[StrategyRun]) -> list[Text]:
    """One line per strategy of a finished transcript: printed at once, so Ctrl-C keeps it."""
    lines = []
    for i, run in enumerate(runs):
        mean, _ = run.probe_tokens()
        recall = run.recall()
        lines.append(Text.assemble(
            (name, "bold"), "  ", (run.label, series_style(i)),
            f"  probes {len(run.probes)}  recall ",
            _recall(recall) if recall is not None else Text(MISSING, style="dim"),
            f"  context mean {number(mean, 1)}",
        ))
    return lines


def corpus_table(totals: Sequence[StrategyTotals], title: str) -> Table:
    """One row per strategy over every transcript: micro recall, mean and max context."""
    table = Table(title=title, header_style="bold",
                  caption="recall over every expected id and text of every probe; "
                          "context tokens at the probes")
    table.add_column("strategy", no_wrap=True)
    for column in ("files", "probes", "id\nrecall", "text\nrecall", "mean\nrecall",
                   "context\nmean", "context\nmax", "turn\nmean"):
        table.add_column(column, justify="right", no_wrap=True)
    for i, row in enumerate(totals):
        table.add_row(Text(row.label, style=series_style(i)), str(row.transcripts),
                      str(row.probes), _recall(row.id_recall), _recall(row.text_recall),
                      _recall(row.mean_recall), number(row.context_tokens_mean, 1),
                      number(row.context_tokens_max), number(row.prompt_tokens_mean, 1))
    return table
