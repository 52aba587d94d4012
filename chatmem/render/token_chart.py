"""The terminal chart of prompt tokens per turn that replay and eval print: one marker and
colour per strategy, the colours the tables name each strategy in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

SERIES_STYLES = ("green", "yellow", "cyan", "magenta", "blue", "red", "white")
MARKERS = ("●", "▲", "■", "◆", "✚", "★", "○", "△", "□", "◇", "✕", "☆")
OVERLAP = ("✱", "bold white")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def marker(index: int) -> str:
    """A chart marker per series that tells series apart without colour; letters after shapes."""
    if index < len(MARKERS):
        return MARKERS[index]
    return LETTERS[(index - len(MARKERS)) % len(LETTERS)]


def series_style(index: int) -> str:
    return SERIES_STYLES[index % len(SERIES_STYLES)]


SPREAD_MOST = 12
"""Most columns one turn of a short chart takes."""


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
    # A few turns get several columns each, a marker at each one's last: one column each,
    # "turn 1" stood under the markers of turns 2 to 6 and "turn 4" under none.
    step = min(width // turns, SPREAD_MOST) if turns > 1 else 1
    step = step if step > len(f"turn {turns}") else 1
    columns = turns * step if step > 1 else min(width, turns)
    grid: list[list[tuple[str, str] | None]] = [[None] * columns for _ in range(height)]
    for index, values in enumerate(series.values()):
        shape = (marker(index), series_style(index))
        for column in range(columns):
            if (column + 1) % step:
                continue
            turn = min(len(values), (column + 1) * turns // columns) - 1
            if turn < 0:
                continue
            row = height - 1 - round(values[turn] / top * (height - 1))
            taken = grid[row][column]
            grid[row][column] = shape if taken is None or taken == shape else OVERLAP
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
    # One turn is one label; a chart narrower than both labels still spaces them. Spread,
    # each label ends under its turn's markers.
    if step > 1:
        axis = "turn 1".rjust(step) + f"turn {turns}".rjust(columns - step)
    else:  # too narrow for a label at each end (3 turns in 18 columns): one for the span
        axis = "turn 1" if turns <= 1 else f"turns 1–{turns}" if columns < len(
            f"turn 1 turn {turns}") else "turn 1" + f"turn {turns}".rjust(columns - 6)
    out.append(" " * (label_width + 2) + axis + "\n", style="dim")
    # The legend breaks between entries, never between a marker and its name.
    entries = [(f"{marker(index)} {label}", series_style(index))
               for index, label in enumerate(series)]
    if any(cell == OVERLAP for cells in grid for cell in cells):  # else it keys no marker
        entries.append((f"{OVERLAP[0]} several", OVERLAP[1]))
    line_width = max(label_width + 2 + columns, 40)
    used = 0
    for entry, style in entries:
        if used and used + 2 + cell_len(entry) > line_width:
            out.append("\n")
            used = 0
        out.append("  " + entry, style=style)
        used += 2 + cell_len(entry)
    out.append("\n")
    return out


class FittedChart:
    """token_chart drawn as wide as the console allows, at most `width` columns."""

    def __init__(self, series: Mapping[str, Sequence[int]], width: int = 60) -> None:
        self.series, self.width = series, width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        top = max((max(v, default=0) for v in self.series.values()), default=0)
        room = options.max_width - len(f"{top:,}") - 2
        yield token_chart(self.series, width=max(min(self.width, room), 10))
