"""The SVG charts of the HTML report: prompt tokens per turn, and recall against cost, each
drawn for a wide screen and for a phone."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from chatmem.evaluation.scoring import lower_recall
from chatmem.render.report_page import DASHES, PALETTE, escape, swatch

WIDTH, HEIGHT = 760, 300
NARROW = 400
"""A phone's chart (under 44rem) is drawn this wide, not shrunk from WIDTH: its 12-unit
labels stay 11 px or more on a 360 px screen, where WIDTH's would be 5 px."""
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 14, 40


def recall_figure(runs: Sequence[dict[str, Any]]) -> str:
    """Recall against mean context tokens, a marker per run (`strategy.label`, `eval`)."""
    return _figure("Recall against cost", _recall_chart, runs,
                   "recall (the lower of id and text recall) against mean context "
                   "tokens at the probes; up and to the left is better")


def token_figure(runs: Sequence[dict[str, Any]]) -> str:
    """Prompt tokens per turn, a line per run (`strategy.label`, `prompt_tokens.per_turn`)."""
    return _figure("Prompt tokens per turn", _token_chart, runs,
                   "prompt tokens per turn, one line per strategy")


def _figure(title: str, chart: Callable[[Sequence[dict[str, Any]], int], str],
            runs: Sequence[dict[str, Any]], caption: str) -> str:
    """The chart drawn for a wide screen and for a phone; CSS shows the one that fits."""
    svg = chart(runs, WIDTH) + chart(runs, NARROW)
    legend = "".join(f"<li>{swatch(i)}{_marker_label(i)} {escape(r['strategy']['label'])}</li>"
                     for i, r in enumerate(runs))
    return (f"<h2>{escape(title)}</h2><figure>{svg}<ul class=\"legend\">{legend}</ul>"
            f"<figcaption class=\"note\">{escape(caption)}</figcaption></figure>")


def _marker_label(index: int) -> str:
    return f'<b title="marker in the recall chart">{index + 1}</b>'


def nice_top(value: float) -> tuple[float, float]:
    """An axis maximum ≥ value and a round step that divides it into 4–6 parts."""
    if value <= 0:
        return 1.0, 0.25
    raw = value / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return step * math.ceil(value / step), step


def _frame(width: int, x_label: str, y_label: str, x_ticks: Sequence[tuple[float, str]],
           y_ticks: Sequence[tuple[float, str]], body: str, label: str) -> str:
    """Axes, grid and tick labels around `body`; ticks are (0..1 position, text)."""
    inner_w, inner_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    kind = "wide" if width == WIDTH else "narrow"
    parts = [f'<svg class="{kind}" viewBox="0 0 {width} {HEIGHT}" role="img" '
             f'aria-label="{escape(label)}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{escape(label)}</title>']
    for at, text in y_ticks:
        y = TOP + inner_h * (1 - at)
        parts.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{width - RIGHT}" '
                     f'y2="{y:.1f}"/><text x="{LEFT - 6}" y="{y + 4:.1f}" '
                     f'text-anchor="end">{escape(text)}</text>')
    for at, text in x_ticks:
        x = LEFT + inner_w * at
        parts.append(f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" '
                     f'text-anchor="middle">{escape(text)}</text>')
    parts.append(f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{width - RIGHT}" '
                 f'y2="{HEIGHT - BOTTOM}"/><line class="axis" x1="{LEFT}" y1="{TOP}" '
                 f'x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>')
    parts.append(f'<text x="{LEFT + inner_w / 2:.1f}" y="{HEIGHT - 6}" '
                 f'text-anchor="middle">{escape(x_label)}</text>')
    parts.append(f'<text x="14" y="{TOP + inner_h / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {TOP + inner_h / 2:.1f})">{escape(y_label)}</text>')
    parts.append(body + "</svg>")
    return "".join(parts)


def _token_chart(runs: Sequence[dict[str, Any]], width: int) -> str:
    series = [r["prompt_tokens"]["per_turn"] for r in runs]
    turns = max((len(s) for s in series), default=0)
    top, step = nice_top(max((max(s, default=0) for s in series), default=0))
    inner_w, inner_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(turn: int) -> float:  # turn counts from 1
        return LEFT + inner_w * ((turn - 1) / max(turns - 1, 1))

    def y(value: float) -> float:
        return TOP + inner_h * (1 - value / top)

    lines = []
    for index, values in enumerate(series):
        points = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in enumerate(values, 1))
        colour = f"var(--s{index % PALETTE})"
        lines.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                     f'stroke-linejoin="round" stroke-dasharray="{DASHES[index % len(DASHES)]}" '
                     f'points="{points}"><title>{escape(runs[index]["strategy"]["label"])}'
                     "</title></polyline>")
        if len(values) == 1:
            lines.append(f'<circle cx="{x(1):.1f}" cy="{y(values[0]):.1f}" r="3" '
                         f'fill="{colour}"/>')
    y_ticks = [(i * step / top, f"{i * step:,.0f}") for i in range(round(top / step) + 1)]
    x_ticks = [((t - 1) / max(turns - 1, 1), f"{t:,}") for t in _turn_ticks(turns)]
    return _frame(width, "turn", "prompt tokens", x_ticks, y_ticks, "".join(lines),
                  "prompt tokens per turn for each strategy")


def _turn_ticks(turns: int) -> list[int]:
    if turns <= 1:
        return [1] if turns else []
    _, step = nice_top(turns)
    step = max(1, int(step))
    ticks = [1] + [t for t in range(step, turns, step) if t - 1 >= step / 2]
    return ticks + ([turns] if turns - ticks[-1] >= step / 2 else [])


def _recall_chart(runs: Sequence[dict[str, Any]], width: int) -> str:
    points = [(i, r["eval"]["context_tokens"]["mean"], _lower_recall(r["eval"]))
              for i, r in enumerate(runs)]
    shown = [(i, c, v) for i, c, v in points if c is not None and v is not None]
    top, step = nice_top(max((c for _, c, _ in shown), default=0))
    inner_w, inner_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    marks = []
    placed: list[tuple[float, float]] = []
    for index, cost, recall in shown:
        x = LEFT + inner_w * cost / top
        y = TOP + inner_h * (1 - recall)
        cx, cy = _free_spot(x, y, placed, width)
        placed.append((cx, cy))
        colour = f"var(--s{index % PALETTE})"
        label = escape(runs[index]["strategy"]["label"])
        leader = (f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{cx:.1f}" y2="{cy:.1f}" '
                  f'stroke="{colour}" stroke-width="1.5"/>' if cy != y else "")
        marks.append(f'<g><title>{label}: lower of id and text recall {recall:.2f}, '
                     f'{cost:,.1f} tokens</title>{leader}<circle cx="{cx:.1f}" cy="{cy:.1f}" '
                     f'r="9" fill="{colour}" '
                     f'fill-opacity="0.9"/><text x="{cx:.1f}" y="{cy + 4:.1f}" '
                     f'text-anchor="middle" style="fill: var(--bg); font-weight: 700">'
                     f"{index + 1}</text></g>")
    x_ticks = [(i * step / top, f"{i * step:,.0f}") for i in range(round(top / step) + 1)]
    y_ticks = [(v / 4, f"{v / 4:.2f}") for v in range(5)]
    return _frame(width, "mean context tokens at the probes", "lower of id and text recall",
                  x_ticks, y_ticks,
                  "".join(marks), "recall against context tokens for each strategy")


def _free_spot(x: float, y: float, placed: Sequence[tuple[float, float]],
               width: int) -> tuple[float, float]:
    """Where a marker goes so it hides no other: its own place, or the nearest free one
    beside it inside the plot (a line then ties it to its true place)."""
    def free(cx: float, cy: float) -> bool:
        return all(abs(cx - px) >= 19 or abs(cy - py) >= 19 for px, py in placed)

    for step in range(0, 12):
        for dx, dy in ((20 * step, 0), (-20 * step, 0), (0, -20 * step), (0, 20 * step)):
            cx, cy = x + dx, y + dy
            if LEFT <= cx <= width - RIGHT and TOP <= cy <= HEIGHT - BOTTOM and free(cx, cy):
                return cx, cy
    return x, y


def _lower_recall(result: dict[str, Any]) -> float | None:
    return lower_recall(result["id_recall"], result["text_recall"])
