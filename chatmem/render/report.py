"""The HTML report of a replay or an eval: the only module that builds HTML.

It takes the command's JSON (docs/schema/chatmem.schema.json), so the page
shows exactly what `--json` prints. The page is self-contained (inline CSS
and SVG, no script, nothing fetched), its tables reflow into labelled blocks
on a narrow screen instead of scrolling sideways, its text wraps anywhere
(Chinese has no spaces to break at), it follows the reader's light or dark
setting, and it prints on white.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from typing import Any

from chatmem.evaluation.scoring import lower_recall
from chatmem.render.cells import MISSING, Grade, number, probe_cell, recall_cell
from chatmem.render.terminal import printable


def escape(text: str) -> str:
    """Data as HTML text, its control characters shown as a terminal shows them: a browser
    obeys a raw U+202E, and a probe or a file name would read reversed."""
    return html.escape(printable(text))


PALETTE = 8
"""Series colours (--s0 … --s7, chosen for colour-blind readers); dashes tell them apart too."""
DASHES = ("", "7 4", "2 3", "10 3 2 3", "4 4", "1 2", "12 4", "6 2 2 2")
WIDTH, HEIGHT = 760, 300
NARROW = 400
"""A phone's chart (under 44rem) is drawn this wide, not shrunk from WIDTH: its 12-unit
labels stay 11 px or more on a 360 px screen, where WIDTH's would be 5 px."""
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 14, 40

STYLE = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1b1f24; --muted: #57606a;
  --line: #d0d7de; --head: #f3f4f6; --good: #116329; --mid: #7d4e00; --bad: #a40e26;
  --s0: #0063a6; --s1: #c24e00; --s2: #007a5a; --s3: #b0457f; --s4: #9a6a00;
  --s5: #3b7fb6; --s6: #6e5bb8; --s7: #4a4a4a; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #a0aab5; --line: #3d444d; --head: #161b22;
    --good: #56d364; --mid: #e3b341; --bad: #ff7b72;
    --s0: #58a6ff; --s1: #ff9b54; --s2: #3fd3a4; --s3: #f28dc7; --s4: #e3c04f;
    --s5: #8cc8ff; --s6: #b7a6ff; --s7: #c9d1d9; } }
* { box-sizing: border-box; }
body { margin: 0 auto; padding: 1.5rem clamp(0.75rem, 3vw, 2rem); max-width: 72rem;
  background: var(--bg); color: var(--fg); line-height: 1.45;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC",
    "PingFang SC", "Microsoft YaHei", sans-serif; overflow-wrap: break-word; }
h1 { font-size: 1.4rem; margin: 0 0 0.25rem; }
h2 { font-size: 1.1rem; margin: 2rem 0 0.5rem; }
p, li { max-width: 60rem; }
.muted, caption, .note { color: var(--muted); }
.note { font-size: 0.9rem; }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0; }
caption { caption-side: bottom; text-align: left; font-size: 0.85rem; padding-top: 0.4rem; }
th, td { border-bottom: 1px solid var(--line); padding: 0.35rem 0.5rem; vertical-align: top; }
thead th { background: var(--head); font-weight: 600; text-align: right; }
td.text { overflow-wrap: anywhere; }
/* A strategy's name breaks between its words and parameters, never inside one
   (a long unspaced probe beside it squeezed "buffer" into "buffe|r"). */
th[scope="row"], th.strategy { overflow-wrap: break-word; }
abbr { text-decoration: none; }
th:first-child, td:first-child, td.text { text-align: left; }
td { text-align: right; font-variant-numeric: tabular-nums; }
.swatch { display: inline-block; width: 1.6em; height: 0.7em; margin-right: 0.4em;
  vertical-align: middle; }
.good { color: var(--good); font-weight: 600; } .mid { color: var(--mid); }
.bad { color: var(--bad); font-weight: 600; }
figure { margin: 0.5rem 0 1rem; }
figure svg { width: 100%; height: auto; display: block; }
figure svg.narrow { display: none; }
svg text { fill: var(--muted); font-size: 12px; font-family: inherit; }
svg .grid { stroke: var(--line); stroke-width: 1; }
svg .axis { stroke: var(--muted); stroke-width: 1; }
.legend { display: flex; flex-wrap: wrap; gap: 0.3rem 1.2rem; padding: 0; margin: 0.4rem 0 0;
  list-style: none; font-size: 0.9rem; }
details { margin: 0.3rem 0; } summary { cursor: pointer; }
tr.total th, tr.total td { border-top: 2px solid var(--line); font-weight: 600; }
@media (max-width: 44rem) {
  table.reflow thead { display: none; }
  table.reflow, table.reflow tbody, table.reflow tr, table.reflow td { display: block;
    width: 100%; }
  table.reflow tr { border-bottom: 2px solid var(--line); padding: 0.3rem 0; }
  table.reflow td { border: 0; padding: 0.1rem 0.25rem; text-align: left; }
  table.reflow td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); }
  table.reflow td:first-child { font-weight: 600; }
  table.reflow caption { display: block; }
  figure svg.wide { display: none; } figure svg.narrow { display: block; }
}
@media print {
  :root { --bg: #fff; --fg: #000; --muted: #333; --line: #999; --head: #eee; }
  body { max-width: none; padding: 0; font-size: 11pt; }
  table, figure { break-inside: avoid; }
  h2 { break-after: avoid; }
  details { display: block; } details > * { display: block; }
}
"""


def html_report(data: dict[str, Any]) -> str:
    """The whole page for one replay or eval JSON object."""
    runs: list[dict[str, Any]] = data["strategies"]
    title = f"chatmem {data['command']} of {data['source']}"
    blocks = [_header(data, title)]
    if data["command"] == "eval" or any(r["eval"]["probes"] for r in runs):
        blocks += [f"<h2>What each strategy remembered</h2>{_recall_table(runs)}",
                   recall_figure(runs)]
    blocks.append(f"<h2>What each strategy cost</h2>{_cost_table(runs)}")
    if _prompts_measured(runs):  # eval --probes-only measures none: no chart of nothing
        blocks.append(_figure("Prompt tokens per turn", _token_chart, runs,
                              "prompt tokens per turn, one line per strategy"))
    if runs and runs[0]["eval"]["per_probe"]:
        blocks.append(f"<h2>Per probe</h2>{_probe_table(runs)}")
    blocks.append(_notices(runs))
    return page(title, blocks)


def page(title: str, blocks: Sequence[str]) -> str:
    """A self-contained page of `blocks` (HTML), styled as every report is."""
    return (
        '<!DOCTYPE html>\n<html lang="und">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(b for b in blocks if b) + "\n</body>\n</html>\n"
    )


def recall_figure(runs: Sequence[dict[str, Any]]) -> str:
    """Recall against mean context tokens, a marker per run (`strategy.label`, `eval`)."""
    return _figure("Recall against cost", _recall_chart, runs,
                   "recall (the lower of id and text recall) against mean context "
                   "tokens at the probes; up and to the left is better")


# -- text blocks ------------------------------------------------------------------


def _header(data: dict[str, Any], title: str) -> str:
    tokenizer = data["tokenizer"]
    counted = (f"Counted with tokenizer <b>{escape(tokenizer['name'])}</b> "
               f"({'exact' if tokenizer['exact'] else 'approximate'})")
    if tokenizer.get("note"):
        counted += f": {escape(tokenizer['note'])}"
    facts = [f"{data['turns']:,} user turns", f"{data['probes']:,} probes",
             "recorded replies reused" if data["keep_replies"] else "replies regenerated"]
    if not _prompts_measured(data["strategies"]):
        facts.append("contexts built at the probes only")
    heading = escape(title)
    if data.get("title"):
        heading += f' <span class="muted">· {escape(str(data["title"]))}</span>'
    return (f"<header><h1>{heading}</h1><p class=\"muted\">{' · '.join(facts)}</p>"
            f"<p class=\"note\">{counted}. Model calls are those the strategy itself made "
            "(summaries, fact extraction).</p></header>")


def _notices(runs: Sequence[dict[str, Any]]) -> str:
    items = [f"<li><b>{escape(r['strategy']['label'])}</b>: {escape(n)}</li>"
             for r in runs for n in r["notices"]]
    if not items:
        return ""
    return (f"<details><summary>Memory notices ({len(items):,})</summary>"
            f"<ul>{''.join(items)}</ul></details>")


# -- tables ---------------------------------------------------------------------------

Column = tuple[str, Callable[[dict[str, Any]], str]]


def strategy_table(runs: Sequence[dict[str, Any]], columns: Sequence[Column],
                   caption: str) -> str:
    """A row per run (`strategy.label`), a column per (name, cell) of `columns`."""
    head = "".join(f"<th scope=\"col\">{escape(name)}</th>" for name, _ in columns)
    rows = []
    for index, run in enumerate(runs):
        cells = [f'<th scope="row">{swatch(index)}{escape(run["strategy"]["label"])}</th>']
        cells += [f'<td data-label="{escape(name)}">{cell(run)}</td>' for name, cell in columns]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (f'<table class="reflow"><caption>{escape(caption)}</caption><thead><tr>'
            f'<th scope="col">strategy</th>{head}</tr></thead><tbody>{"".join(rows)}'
            "</tbody></table>")


def _prompts_measured(runs: Sequence[dict[str, Any]]) -> bool:
    return any(r["prompt_tokens"]["per_turn"] is not None for r in runs)


def _cost_table(runs: Sequence[dict[str, Any]]) -> str:
    columns: list[Column] = [
        ("turns", lambda r: number(r["turns"])),
        ("tokens total", lambda r: number(r["prompt_tokens"]["total"])),
        ("tokens mean", lambda r: number(r["prompt_tokens"]["mean"], 1)),
        ("tokens max", lambda r: number(r["prompt_tokens"]["max"])),
        ("model calls", lambda r: number(r["strategy_model_calls"])),
        ("summary versions", lambda r: number(r["summary_versions"])),
        ("facts", lambda r: number(r["facts"])),
        ("pinned", lambda r: number(r["pinned"])),
    ]
    caption = ("prompt tokens sent per turn over the whole conversation"
               if _prompts_measured(runs) else
               "turns stored with their recorded replies (--probes-only): no prompt tokens "
               "per turn measured")
    return strategy_table(runs, columns, caption)


def _recall_table(runs: Sequence[dict[str, Any]]) -> str:
    columns: list[Column] = [
        ("probes", lambda r: number(r["eval"]["probes"])),
        ("id recall", lambda r: recall_html(r["eval"]["id_recall"])),
        ("text recall", lambda r: recall_html(r["eval"]["text_recall"])),
    ]
    if any(r["eval"]["answer_recall"] is not None for r in runs):
        columns.append(("answer recall", lambda r: recall_html(r["eval"]["answer_recall"])))
    columns += [
        ("context mean", lambda r: number(r["eval"]["context_tokens"]["mean"], 1)),
        ("context max", lambda r: number(r["eval"]["context_tokens"]["max"])),
        ("model calls", lambda r: number(r["strategy_model_calls"])),
    ]
    return strategy_table(runs, columns, "id recall: expected messages in the context "
                          "verbatim; text recall: expected strings anywhere in its memory "
                          "parts; context tokens at the probes")


NAMED_COLUMNS = 4
"""Up to this many strategies the per-probe columns carry names; beyond, numbers and a key."""


def strategy_columns(labels: Sequence[str]) -> tuple[str, str]:
    """The header cells of one column per strategy, and the key below the table when there
    are too many to name in the header (then numbered)."""
    numbered = len(labels) > NAMED_COLUMNS
    head = "".join(
        f'<th scope="col" class="strategy">{swatch(i)}'
        + (f'<abbr title="{escape(label)}">{i + 1}</abbr>' if numbered else escape(label))
        + "</th>" for i, label in enumerate(labels))
    key = ""
    if numbered:
        key = '<ul class="legend">' + "".join(
            f"<li>{swatch(i)}<b>{i + 1}</b> {escape(label)}</li>"
            for i, label in enumerate(labels)) + "</ul>"
    return head, key


def _probe_table(runs: Sequence[dict[str, Any]]) -> str:
    head, key = strategy_columns([r["strategy"]["label"] for r in runs])
    rows = []
    for index, probe in enumerate(runs[0]["eval"]["per_probe"]):
        cells = [f'<td class="text" data-label="probe">{escape(probe["question"])}</td>',
                 f'<td data-label="after turn">{probe["after_turn"]:,}</td>']
        for run in runs:
            cells.append(f'<td data-label="{escape(run["strategy"]["label"])}">'
                         f'{_probe_cell(run["eval"]["per_probe"][index])}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (key + '<table class="reflow"><caption>✓ every expected id and text in the '
            "context · ✗ none of them · n/m: n of the m expected</caption><thead><tr>"
            f'<th scope="col">probe</th><th scope="col">after turn</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


PROBE_TITLES = {Grade.GOOD: "all found", Grade.BAD: "none found"}


def _probe_cell(result: dict[str, Any]) -> str:
    text, grade = probe_cell(len(result["found_ids"]) + len(result["found_text"]),
                             len(result["expect_ids"]) + len(result["expect_text"]))
    title = f' title="{PROBE_TITLES[grade]}"' if grade in PROBE_TITLES else ""
    return f'<span class="{grade.value}"{title}>{text}</span>'


def recall_html(value: float | None) -> str:
    if value is None:
        return f'<span class="muted">{MISSING}</span>'
    text, grade = recall_cell(value)
    return f'<span class="{grade.value}">{text}</span>'


def swatch(index: int) -> str:
    return (f'<svg class="swatch" viewBox="0 0 24 10" aria-hidden="true"><line x1="0" y1="5" '
            f'x2="24" y2="5" stroke="var(--s{index % PALETTE})" stroke-width="3" '
            f'stroke-dasharray="{DASHES[index % len(DASHES)]}"/></svg>')


# -- charts ---------------------------------------------------------------------------------


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
        marks.append(f'<g><title>{label}: recall {recall:.2f}, {cost:,.1f} tokens</title>'
                     f'{leader}<circle cx="{cx:.1f}" cy="{cy:.1f}" r="9" fill="{colour}" '
                     f'fill-opacity="0.9"/><text x="{cx:.1f}" y="{cy + 4:.1f}" '
                     f'text-anchor="middle" style="fill: var(--bg); font-weight: 700">'
                     f"{index + 1}</text></g>")
    x_ticks = [(i * step / top, f"{i * step:,.0f}") for i in range(round(top / step) + 1)]
    y_ticks = [(v / 4, f"{v / 4:.2f}") for v in range(5)]
    return _frame(width, "mean context tokens at the probes", "recall", x_ticks, y_ticks,
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
