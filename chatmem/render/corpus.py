"""`eval DIR`: a line per transcript as it finishes, then one row per strategy for all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text

from chatmem.render.cells import MISSING, number
from chatmem.render.compare import _recall, fitted_summary, series_style
from chatmem.render.layout import Fitted

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


def corpus_table(totals: Sequence[StrategyTotals], title: str) -> Fitted:
    """One row per strategy over every transcript: micro recall, mean and max context
    (stacked when narrow, as replay's and eval's tables are)."""
    caption = ("recall over every expected id and text of every probe; context tokens at the "
               "probes")
    columns = ["files", "probes", "id\nrecall", "text\nrecall", "mean\nrecall", "context\nmean",
               "context\nmax", "turn\nmean"]
    rows = []
    for row in totals:
        values: list[RenderableType] = [
            str(row.transcripts), str(row.probes), _recall(row.id_recall),
            _recall(row.text_recall), _recall(row.mean_recall),
            number(row.context_tokens_mean, 1), number(row.context_tokens_max),
            number(row.prompt_tokens_mean, 1),
        ]
        rows.append([(c.replace("\n", " "), v) for c, v in zip(columns, values, strict=True)])
    return fitted_summary([row.label for row in totals], columns, rows, title, caption)
