"""Replay and eval output: per-strategy tables, probe grids and notices, with the terminal
chart of render.token_chart (HTML: render.report)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.cells import cell_len
from rich.columns import Columns
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from chatmem.memory.assembly import span
from chatmem.notices import (
    FactsFailed,
    HelperTooSmall,
    MemoryUpdateFailed,
    NoEmbedder,
    Notice,
    SummaryFailed,
    SummaryUpdated,
)
from chatmem.render.cells import MISSING, Grade, number, probe_cell, recall_cell
from chatmem.render.counts import counted
from chatmem.render.layout import Fitted, Flow, Label, Narrowing
from chatmem.render.notices import NO_EMBEDDER, helper_too_small_text, replay_notice_text
from chatmem.render.token_chart import LETTERS, FittedChart, series_style

if TYPE_CHECKING:
    from chatmem.evaluation.scoring import ProbeResult, StrategyRun

RECALL_STYLES = {Grade.GOOD: "green", Grade.MID: "yellow", Grade.BAD: "red"}
PROBE_STYLES = {Grade.GOOD: "bold green", Grade.MID: "yellow", Grade.BAD: "bold red",
                Grade.NONE: "dim"}


def short_of(value: float, threshold: float) -> str:
    """`value`, known to be below `threshold`, with the fewest digits (two at least) that
    still show it below: 2/3 under 0.667 is 0.6667, never a 0.67 above the bar."""
    for digits in range(2, 18):
        shown = f"{value:.{digits}f}"
        if float(shown) < threshold:
            return shown
    return repr(value)


def recall_text(value: float | None) -> Text:
    """A recall figure, coloured by its grade; a dim mark when there is none."""
    if value is None:
        return Text(MISSING, style="dim")
    text, grade = recall_cell(value)
    return Text(text, style=RECALL_STYLES[grade])


def _stacked(labels: Sequence[str], columns: Sequence[str],
             rows: Sequence[Sequence[RenderableType]], title: str | None, caption: str) -> Group:
    """The narrow layout: per strategy, its label, then `name value` pairs that wrap."""
    blocks: list[RenderableType] = []
    if title:
        blocks.append(Text(title, style="bold italic"))
    for i, (label, cells) in enumerate(zip(labels, rows, strict=True)):
        blocks.append(Text(label, style=f"bold {series_style(i)}"))
        pairs = [Text.assemble((f"{name} ", "dim"),
                               value if isinstance(value, Text) else Text(str(value)))
                 for name, value in zip(_names(columns), cells, strict=True)]
        blocks.append(Padding(Columns(pairs, padding=(0, 3)), (0, 0, 0, 2)))
    blocks.append(Text(caption, style="dim"))
    return Group(*blocks)


def _summary(labels: Sequence[str], columns: Sequence[str],
             rows: Sequence[Sequence[RenderableType]], title: str | None,
             caption: str, *, compact: bool = False) -> Narrowing:
    """One row per strategy. `compact`: no vertical rules, for when the ruled table is
    a few columns too wide (as `sessions list` does at 80 columns)."""

    def build(width: int | None) -> Table:
        if compact:
            out = Table(title=title, header_style="bold", caption=caption,
                        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        else:
            out = Table(title=title, header_style="bold", caption=caption)
        out.add_column("strategy")
        for column in columns:
            out.add_column(column, justify="right", no_wrap=True)
        for i, (label, cells) in enumerate(zip(labels, rows, strict=True)):
            out.add_row(Label(label, series_style(i), width), *cells)
        return out

    return Narrowing(build, labels)


def fitted_summary(labels: Sequence[str], columns: Sequence[str],
                   rows: Sequence[Sequence[RenderableType]], title: str | None,
                   caption: str) -> Fitted:
    """One row per strategy `labels` names, a value per column in each of `rows`: ruled,
    else without rules, else a list per strategy, whichever fits first."""
    return Fitted(_summary(labels, columns, rows, title, caption),
                  _summary(labels, columns, rows, title, caption, compact=True),
                  _stacked(labels, columns, rows, title, caption))


def _names(columns: Sequence[str]) -> list[str]:
    """Column headers on one line each, as the narrow layout names its values."""
    return [column.replace("\n", " ") for column in columns]


FELL_BACK = "→ words only"
"""After a label whose strategy recalls by meaning but had no embedder (NoEmbedder): its
figures are mode=bm25's, whatever mode the label asks for."""


def fell_back(run: StrategyRun) -> bool:
    return any(isinstance(n, NoEmbedder) for n in run.notices)


def shown_label(run: StrategyRun) -> str:
    """The label as a summary table shows it: with FELL_BACK when the mode fell back."""
    return f"{run.label} {FELL_BACK}" if fell_back(run) else run.label


def _caption(text: str, counted: str | None, runs: Sequence[StrategyRun] = ()) -> str:
    lines = [text, *([counted] if counted else [])]
    if any(fell_back(r) for r in runs):
        lines.append(f"{FELL_BACK}: no embedder, so its figures are mode=bm25's (the notice "
                     "says how to add one)")
    return "\n".join(lines)


def replay_table(runs: Sequence[StrategyRun], title: str | None = None,
                 counted: str | None = None) -> Fitted:
    """One row per strategy: what replaying the conversation cost (stacked when narrow)."""
    caption = _caption("prompt tokens per turn; model calls made by the strategy itself", counted,
                       runs)
    columns = ["turns", "tokens\ntotal", "tokens\nmean", "tokens\nmax", "model\ncalls",
               "summary\nversions", "facts\n+pins"]
    rows = []
    for run in runs:
        mean = run.total_tokens / run.turns if run.turns else None
        values: list[RenderableType] = [
            str(run.turns), number(run.total_tokens), number(mean, 1),
            number(max(run.prompt_tokens, default=0)), str(run.model_calls),
            str(run.summary_versions), f"{run.facts}+{run.pinned}" if run.pinned
            else str(run.facts),
        ]
        rows.append(values)
    return fitted_summary([shown_label(r) for r in runs], columns, rows, title, caption)


def eval_table(runs: Sequence[StrategyRun], title: str | None = None,
               counted: str | None = None) -> Fitted:
    """One row per strategy: what it remembered at the probes, and at what context size."""
    answered = any(r.answer_recall() is not None for r in runs)
    caption = _caption("context tokens at the probes; model calls made by the strategy itself",
                       counted, runs)
    columns = ["probes", "id\nrecall", "text\nrecall"]
    columns += ["answer\nrecall"] if answered else []
    columns += ["context\nmean", "context\nmax", "model\ncalls"]
    rows = []
    for run in runs:
        mean, most = run.probe_tokens()
        values: list[RenderableType] = [
            str(len(run.probes)), recall_text(run.id_recall()), recall_text(run.text_recall()),
        ]
        if answered:
            values.append(recall_text(run.answer_recall()))
        values += [number(mean, 1), number(most), str(run.model_calls)]
        rows.append(values)
    return fitted_summary([shown_label(r) for r in runs], columns, rows, title, caption)


PROBE_CAPTION = ("✓ every expected id and text in the context · ✗ none of them · "
                 "n/m: n of the m expected ids and texts")


def probe_legend() -> Flow:
    """PROBE_CAPTION broken between entries only (a caption wrapped mid-phrase)."""
    keys = PROBE_CAPTION.split(" · ")
    return Flow([Text(key + " ·" * (i < len(keys) - 1), style="dim")
                 for i, key in enumerate(keys)], gap=1)


def probe_table(runs: Sequence[StrategyRun]) -> Fitted:
    """Each probe against each strategy: ✓ all found, ✗ none, else found/expected.

    Wide: one column per strategy, named. Many or long names: columns lettered
    A, B, … with a key above. Too many strategies for one grid: several grids of
    fewer strategies each, every one with the probes. Too narrow for a grid of
    two: one block per probe.
    """
    probes = runs[0].probes if runs else []
    cells = [[_probe_cell(run.probes[index]) for run in runs] for index in range(len(probes))]
    every = range(len(runs))
    letters = [LETTERS[i % len(LETTERS)] for i in every]
    key = Flow([Text.assemble((f"{letter} ", "bold"), (run.label, series_style(i)))
                for i, (letter, run) in enumerate(zip(letters, runs, strict=True))])
    layouts: list[RenderableType] = [
        _probe_grid(probes, cells, [r.label for r in runs], every),
        Group(key, _probe_grid(probes, cells, letters, every)),
    ]
    sizes = sorted({-(-len(runs) // parts) for parts in range(2, len(runs) // 2 + 1)},
                   reverse=True)
    for size in (s for s in sizes if s >= 2):
        groups = [range(start, min(start + size, len(runs)))
                  for start in range(0, len(runs), size)]
        layouts.append(Group(key, *(
            _probe_grid(probes, cells, letters, group,
                        title=f"per probe, {letters[group[0]]}–{letters[group[-1]]}",
                        legend=group is groups[-1])
            for group in groups)))
    blocks: list[RenderableType] = [Text("per probe", style="bold italic")]
    for index, probe in enumerate(probes):
        blocks.append(Text.assemble((f"after turn {probe.after_turn}: ", "bold"), probe.question))
        line = Text("  ")
        for i, run in enumerate(runs):
            line.append("  " if i else "")
            line.append_text(cells[index][i])
            line.append(f" {run.label}", style=series_style(i))
        blocks.append(line)
    blocks.append(probe_legend())
    return Fitted(*layouts, Group(*blocks))


PROBE_WIDTH = 24
"""The narrowest probe column a grid may have: narrower, a question takes more lines than
the grid saves."""


def _probe_grid(probes: Sequence[ProbeResult], cells: Sequence[Sequence[Text]],
                headers: Sequence[str], which: Sequence[int], *, title: str = "per probe",
                legend: bool = True) -> RenderableType:
    out = Table(header_style="bold", title=title)
    out.add_column("after\nturn", justify="right", no_wrap=True)
    longest = max((cell_len(p.question) for p in probes), default=0)
    out.add_column("probe", overflow="fold", ratio=1, min_width=min(longest, PROBE_WIDTH))
    for i in which:
        # A no-wrap column's header is measured by its longest word: say its real width,
        # or Fitted would take a grid that overflows for one that fits.
        out.add_column(headers[i], style=series_style(i), justify="center", no_wrap=True,
                       min_width=cell_len(headers[i]))
    for index, probe in enumerate(probes):
        out.add_row(str(probe.after_turn), probe.question, *(cells[index][i] for i in which))
    return Group(out, probe_legend()) if legend else out


def _probe_cell(result: ProbeResult) -> Text:
    text, grade = probe_cell(len(result.found_ids) + len(result.found_text),
                             len(result.scored_ids()) + len(result.scored_text()))
    return Text(text, style=PROBE_STYLES[grade])


def zone_text(zone: str) -> str:
    """The caption's word on the zone days were read in ("on 5 March" depends on it)."""
    return f"days read in time zone {zone}"


def _with_zone(counted: str | None, zone: str | None) -> str | None:
    return "; ".join(t for t in (counted, zone and zone_text(zone)) if t) or None


def replay_view(runs: Sequence[StrategyRun], source: str, counted: str | None = None,
                *, zone: str | None = None) -> Group:
    blocks: list[RenderableType] = [
        replay_table(runs, title=f"replay of {source}", counted=_with_zone(counted, zone)),
        FittedChart({r.label: r.prompt_tokens for r in runs}),
    ]
    for run in runs:
        if run.session:
            blocks.append(Text(f"{run.label} saved as session {run.session} "
                               f"(chatmem inspect {run.session} --turn N)", style="dim"))
    return Group(*blocks)


def eval_view(runs: Sequence[StrategyRun], source: str, counted: str | None = None,
              *, zone: str | None = None) -> Group:
    return Group(eval_table(runs, title=f"eval of {source}", counted=_with_zone(counted, zone)),
                 probe_table(runs))


def run_notice_text(notice: Notice) -> str:
    """A notice of one strategy's run, which its label already names (replay, eval, their
    JSON and report): NoEmbedder and HelperTooSmall without their own strategy name, else
    as replay words it."""
    if isinstance(notice, NoEmbedder):
        return NO_EMBEDDER
    if isinstance(notice, HelperTooSmall):
        return helper_too_small_text(notice)
    return replay_notice_text(notice)


def _folded(notices: Sequence[Notice]) -> list[Notice]:
    """`notices` with each summary, facts or memory update failure replaced by the last of
    the run failing the same way (the widest span of turns behind; at a replay's last turn,
    never retried), so that they read as one line."""
    last: dict[tuple[type, str, bool], Notice] = {}
    keys: list[tuple[type, str, bool] | None] = []
    for notice in notices:
        key: tuple[type, str, bool] | None = None
        if isinstance(notice, SummaryFailed | FactsFailed):
            key = (type(notice), notice.error,
                   isinstance(notice, FactsFailed) and notice.passed_over is not None)
            last[key] = notice
        elif isinstance(notice, MemoryUpdateFailed):
            key = (type(notice), notice.error, notice.stored)
            last[key] = notice
        keys.append(key)
    return [notice if key is None else last[key] for notice, key in zip(notices, keys, strict=True)]


def replay_notices(runs: Sequence[StrategyRun], *, verbose: bool = False) -> list[str]:
    """What a replay or an eval tells stderr: every notice with `verbose`, else one line per
    strategy; a notice several strategies share is one line naming them all, never repeated.

    A replay folds dozens of summary versions; their per-version notices become a
    count. Other notices, such as a summary falling behind, are kept as they are.
    """
    said: dict[str, list[str]] = {}
    for run in runs:
        progress = [n for n in run.notices if isinstance(n, SummaryUpdated)]
        others = run.notices if verbose else [n for n in run.notices
                                              if not isinstance(n, SummaryUpdated)]
        # A notice of each turn (a memory update failing) was said once where --json
        # listed it at every turn: said once, with how many. A summary or facts falling
        # behind names the turns behind, one more each turn: its last says them all.
        texts = [run_notice_text(notice) for notice in
                 (others if verbose else _folded(others))]
        for text in dict.fromkeys(texts):
            times = texts.count(text)
            if times > 1:
                text += f"; {times} times in {counted(run.turns, 'turn')}"
            labels = said.setdefault(text, [])
            if run.label not in labels:
                labels.append(run.label)
        if verbose or not progress:
            continue
        versions = run.summary_versions or len(progress)
        line = (f"{counted(versions, 'summary version')},"
                f" the last covering {span(range(1, progress[-1].upto + 1))}")
        if run.dropped_anchors:
            kept = "not pinned" if any(n.unpinned for n in progress) else "pinned"
            line += (f"; {counted(run.dropped_anchors, 'detail')}"
                     f" dropped by the summarizer, {kept}")
        said.setdefault(line + " (--verbose lists each version)", []).append(run.label)
    return [f"{', '.join(labels)}: {text}" for text, labels in said.items()]
