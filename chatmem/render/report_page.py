"""The page every HTML report is (chatmem.render.report, chatmem.render.corpus_report):
self-contained (inline CSS, no script, nothing fetched), reflowing on a narrow screen,
following the reader's light or dark setting and printing on white; its text escaped and
the series swatches its tables and charts share."""

from __future__ import annotations

import html
from collections.abc import Sequence

from chatmem.render.terminal import printable


def escape(text: str) -> str:
    """Data as HTML text, its control characters shown as a terminal shows them: a browser
    obeys a raw U+202E, and a probe or a file name would read reversed."""
    return html.escape(printable(text))


PALETTE = 8
"""Series colours (--s0 … --s7, chosen for colour-blind readers); dashes tell them apart too."""
DASHES = ("", "7 4", "2 3", "10 3 2 3", "4 4", "1 2", "12 4", "6 2 2 2")

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


def page(title: str, blocks: Sequence[str]) -> str:
    """A self-contained page of `blocks` (HTML), styled as every report is."""
    return (
        '<!DOCTYPE html>\n<html lang="und">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(b for b in blocks if b) + "\n</body>\n</html>\n"
    )


def swatch(index: int) -> str:
    return (f'<svg class="swatch" viewBox="0 0 24 10" aria-hidden="true"><line x1="0" y1="5" '
            f'x2="24" y2="5" stroke="var(--s{index % PALETTE})" stroke-width="3" '
            f'stroke-dasharray="{DASHES[index % len(DASHES)]}"/></svg>')

