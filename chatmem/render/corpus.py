"""`eval DIR`: a line per transcript as it finishes, then one row per strategy for all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text

from chatmem.notices import ContextsByWordsAlone, ContextsOverBudget, ContextsWithoutVectors
from chatmem.render.cells import number
from chatmem.render.compare import fitted_summary, recall_text, zone_text
from chatmem.render.layout import Fitted
from chatmem.render.notices import replay_notice_text
from chatmem.render.token_chart import series_style

if TYPE_CHECKING:
    from chatmem.evaluation.corpus import StrategyTotals
    from chatmem.evaluation.recording import Tokenizer
    from chatmem.evaluation.scoring import StrategyRun


def transcript_lines(name: str, runs: Sequence[StrategyRun],
                     tokenizer: Tokenizer | None = None) -> list[Text]:
    """One line per strategy of a finished transcript: printed at once, so Ctrl-C keeps it.
    Approximate counts are marked there, beside the figure they qualify. Id and text recall
    each by name: the lower of the two alone read as id recall where expected text is
    paraphrase."""
    lines = []
    for i, run in enumerate(runs):
        mean, _ = run.probe_tokens()
        lines.append(Text.assemble(
            (name, "bold"), "  ", (run.label, series_style(i)),
            f"  probes {len(run.probes)}  id recall ", recall_text(run.id_recall()),
            "  text recall ", recall_text(run.text_recall()),
            f"  context mean {number(mean, 1)}",
            ("" if tokenizer is None or tokenizer.exact
             else (f" (approximate, {tokenizer.name})", "yellow")),
        ))
    return lines


def tokenizers_text(counted: Sequence[tuple[str, Tokenizer]]) -> str:
    """What the folder's token figures were counted with, from (transcript, tokenizer):
    one tokenizer said once; several each with their transcripts, and plainly that the
    means mix exact with approximate counts when they do."""
    groups: dict[str, list[str]] = {}
    for name, tokenizer in counted:
        groups.setdefault(tokenizer.describe(), []).append(name)
    if len(groups) == 1:
        return next(iter(groups))
    said = " · ".join(f"{', '.join(names)}: {described}" for described, names in groups.items())
    if len({tokenizer.exact for _, tokenizer in counted}) > 1:
        return f"the token figures mix exact and approximate counts: {said}"
    return said


def transcript_caveats(name: str, runs: Sequence[StrategyRun]) -> list[str]:
    """What qualifies a finished transcript's figures (contexts over their budget, ranked
    by words alone where meaning was asked for), one line each: the folder's table alone
    read as if every context was built as asked."""
    caveats = (ContextsOverBudget, ContextsByWordsAlone, ContextsWithoutVectors)
    return [f"{name} {run.label}: {replay_notice_text(n)}" for run in runs
            for n in run.notices if isinstance(n, caveats)]


def corpus_table(totals: Sequence[StrategyTotals], title: str,
                 counted: Sequence[tuple[str, Tokenizer]] = (), zone: str | None = None
                 ) -> Fitted:
    """One row per strategy over every transcript: micro recall, mean and max context
    (stacked when narrow, as replay's and eval's tables are); `counted` names each
    transcript's tokenizer and `zone` the time zone days were read in, said in the
    caption."""
    caption = ("recall over every expected id and text of every probe; context tokens at the "
               "probes")
    if counted:
        caption += "\n" + tokenizers_text(counted)
    if zone:
        caption += "\n" + zone_text(zone)
    columns = ["files", "probes", "id\nrecall", "text\nrecall", "mean\nrecall", "context\nmean",
               "context\nmax", "turn\nmean"]
    rows: list[list[RenderableType]] = [
        [str(row.transcripts), str(row.probes), recall_text(row.id_recall),
         recall_text(row.text_recall), recall_text(row.mean_recall),
         number(row.context_tokens_mean, 1), number(row.context_tokens_max),
         number(row.prompt_tokens_mean, 1)]
        for row in totals
    ]
    return fitted_summary([row.label for row in totals], columns, rows, title, caption)
