"""Replay and eval output: per-strategy tables, a terminal chart, an HTML report."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from chatmem.scoring import ProbeResult, StrategyRun

SERIES_STYLES = ("green", "yellow", "cyan", "magenta", "blue", "red", "white")
MARKERS = ("●", "▲", "■", "◆", "✚", "★", "○")
OVERLAP = ("✱", "bold white")


def _number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def _recall(value: float | None) -> Text:
    if value is None:
        return Text("–", style="dim")
    style = "green" if value >= 0.999 else "yellow" if value >= 0.5 else "red"
    return Text(f"{value:.2f}", style=style)


def _label_width(runs: Sequence[StrategyRun]) -> int:
    return min(max((len(r.label) for r in runs), default=8), 24)


def replay_table(runs: Sequence[StrategyRun], title: str | None = None) -> Table:
    """One row per strategy: what replaying the conversation cost."""
    out = Table(title=title, header_style="bold",
                caption="prompt tokens per turn; model calls made by the strategy itself")
    columns = ["strategy", "turns", "tokens\ntotal", "tokens\nmean", "tokens\nmax",
               "model\ncalls", "summary\nversions", "facts"]
    for column in columns:
        text = column == "strategy"
        out.add_column(column, justify="left" if text else "right", no_wrap=not text,
                       overflow="fold", min_width=_label_width(runs) if column == "strategy"
                       else None)
    for i, run in enumerate(runs):
        mean = run.total_tokens / run.turns if run.turns else None
        cells: list[RenderableType] = [
            Text(run.label, style=SERIES_STYLES[i % len(SERIES_STYLES)]),
            str(run.turns), _number(run.total_tokens), _number(mean, 1),
            _number(max(run.prompt_tokens, default=0)), str(run.model_calls),
            str(run.summary_versions), str(run.facts),
        ]
        out.add_row(*cells)
    return out


def eval_table(runs: Sequence[StrategyRun], title: str | None = None) -> Table:
    """One row per strategy: what it remembered at the probes, and at what context size."""
    answered = any(r.answer_recall() is not None for r in runs)
    out = Table(title=title, header_style="bold",
                caption="context tokens at the probes; model calls made by the strategy itself")
    columns = ["strategy", "probes", "id\nrecall", "text\nrecall"]
    columns += ["answer\nrecall"] if answered else []
    columns += ["context\nmean", "context\nmax", "model\ncalls"]
    for column in columns:
        out.add_column(column, justify="left" if column == "strategy" else "right",
                       no_wrap=column != "strategy", overflow="fold",
                       min_width=_label_width(runs) if column == "strategy" else None)
    for i, run in enumerate(runs):
        mean, most = run.probe_tokens()
        cells: list[RenderableType] = [
            Text(run.label, style=SERIES_STYLES[i % len(SERIES_STYLES)]),
            str(len(run.probes)), _recall(run.id_recall()), _recall(run.text_recall()),
        ]
        if answered:
            cells.append(_recall(run.answer_recall()))
        cells += [_number(mean, 1), _number(most), str(run.model_calls)]
        out.add_row(*cells)
    return out


def probe_table(runs: Sequence[StrategyRun]) -> Table:
    """Each probe against each strategy: ✓ all found, ✗ none, else ids and texts found."""
    out = Table(header_style="bold", title="per probe",
                caption="✓ every expected id and text in the context · ✗ none of them")
    out.add_column("after\nturn", justify="right", no_wrap=True)
    out.add_column("probe", overflow="fold", ratio=1, min_width=16)
    for i, run in enumerate(runs):
        out.add_column(run.label, style=SERIES_STYLES[i % len(SERIES_STYLES)], justify="center",
                       no_wrap=True)
    for index, probe in enumerate(runs[0].probes if runs else []):
        cells: list[RenderableType] = [str(probe.after_turn), probe.question]
        for run in runs:
            cells.append(_probe_cell(run.probes[index]))
        out.add_row(*cells)
    return out


def _probe_cell(result: ProbeResult) -> Text:
    found = len(result.found_ids) + len(result.found_text)
    expected = len(result.expect_ids) + len(result.expect_text)
    if found == expected:
        return Text("✓", style="bold green")
    if found == 0:
        return Text("✗", style="bold red")
    parts = []
    if result.expect_ids:
        parts.append(f"ids {len(result.found_ids)}/{len(result.expect_ids)}")
    if result.expect_text:
        parts.append(f"text {len(result.found_text)}/{len(result.expect_text)}")
    return Text("\n".join(parts), style="yellow")


def token_chart(
    series: Mapping[str, Sequence[int]], *, width: int = 60, height: int = 12,
    title: str = "prompt tokens per turn",
) -> Text:
    """A scatter chart of prompt tokens per turn, one marker and colour per strategy.

    With more turns than columns, a column shows the last turn it covers.
    """
    turns = max((len(v) for v in series.values()), default=0)
    top = max((max(v, default=0) for v in series.values()), default=0)
    out = Text()
    out.append(f"{title}\n", style="bold")
    if not turns or not top:
        out.append("(no turns)\n", style="dim")
        return out
    columns = min(width, turns)
    grid: list[list[tuple[str, str] | None]] = [[None] * columns for _ in range(height)]
    for index, values in enumerate(series.values()):
        marker = (MARKERS[index % len(MARKERS)], SERIES_STYLES[index % len(SERIES_STYLES)])
        for column in range(columns):
            turn = min(len(values), (column + 1) * turns // columns) - 1
            if turn < 0:
                continue
            row = height - 1 - round(values[turn] / top * (height - 1))
            taken = grid[row][column]
            grid[row][column] = marker if taken is None or taken == marker else OVERLAP
    label_width = len(f"{top:,}")
    for r, cells in enumerate(grid):
        value = round(top * (height - 1 - r) / (height - 1))
        label = f"{value:,}" if r in (0, height // 2, height - 1) else ""
        out.append(f"{label:>{label_width}} ┤", style="dim")
        for cell in cells:
            if cell is None:
                out.append(" ")
            else:
                out.append(cell[0], style=cell[1])
        out.append("\n")
    out.append(" " * label_width + " └" + "─" * columns + "\n", style="dim")
    right = f"turn {turns}"
    out.append(" " * (label_width + 2) + "turn 1" + right.rjust(max(columns - 6, len(right)))
               + "\n", style="dim")
    for index, label in enumerate(series):
        out.append(f"  {MARKERS[index % len(MARKERS)]} {label}",
                   style=SERIES_STYLES[index % len(SERIES_STYLES)])
    out.append(f"  {OVERLAP[0]} several", style=OVERLAP[1])
    out.append("\n")
    return out


def replay_view(runs: Sequence[StrategyRun], source: str) -> Group:
    blocks: list[RenderableType] = [
        replay_table(runs, title=f"replay of {source}"),
        token_chart({r.label: r.prompt_tokens for r in runs}),
    ]
    for run in runs:
        if run.session:
            blocks.append(Text(f"{run.label} saved as session {run.session} "
                               f"(chatmem inspect {run.session} --turn N)", style="dim"))
    return Group(*blocks)


def eval_view(runs: Sequence[StrategyRun], source: str) -> Group:
    return Group(eval_table(runs, title=f"eval of {source}"), probe_table(runs))


def html_report(title: str, *renderables: RenderableType) -> str:
    """A self-contained HTML page (inline styles, no scripts) of the given renderables."""
    console = Console(record=True, file=io.StringIO(), width=120, force_terminal=True,
                      color_system="truecolor")
    console.print(Text(title, style="bold"))
    for renderable in renderables:
        console.print(renderable)
    return console.export_html(inline_styles=True)
