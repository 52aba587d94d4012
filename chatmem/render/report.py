"""The HTML report of a replay or an eval (its page in report_page, its charts in
report_charts).

It takes the command's JSON (docs/chatmem.schema.json), so the page
shows exactly what `--json` prints. The page is self-contained (inline CSS
and SVG, no script, nothing fetched), its tables reflow into labelled blocks
on a narrow screen instead of scrolling sideways, its text wraps anywhere
(Chinese has no spaces to break at), it follows the reader's light or dark
setting, and it prints on white.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from chatmem.render.cells import MISSING, Grade, number, probe_cell, recall_cell
from chatmem.render.report_charts import recall_figure, token_figure
from chatmem.render.report_page import escape, page, swatch


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
        blocks.append(token_figure(runs))
    if runs and runs[0]["eval"]["per_probe"]:
        blocks.append(f"<h2>Per probe</h2>{_probe_table(runs)}")
    blocks.append(_notices(runs))
    return page(title, blocks)

# -- text blocks ------------------------------------------------------------------


def _header(data: dict[str, Any], title: str) -> str:
    tokenizer = data["tokenizer"]
    counted = (f"Counted with tokenizer <b>{escape(tokenizer['name'])}</b> "
               f"({'exact' if tokenizer['exact'] else 'approximate'})")
    if tokenizer.get("note"):
        counted += f": {escape(tokenizer['note'])}"
    if data.get("timezone"):
        counted += f"; days read in time zone <b>{escape(data['timezone'])}</b>"
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


PROBE_TITLES = {Grade.GOOD: "all found", Grade.BAD: "none found",
                Grade.NONE: "nothing left to measure"}


def _probe_cell(result: dict[str, Any]) -> str:
    text, grade = probe_cell(len(result["found_ids"]) + len(result["found_text"]),
                             len(result["expect_ids"]) + len(result["expect_text"])
                             - len(result.get("replaced_ids", ()))
                             - len(result.get("replaced_text", ())))
    title = f' title="{PROBE_TITLES[grade]}"' if grade in PROBE_TITLES else ""
    return f'<span class="{grade.value}"{title}>{text}</span>'


def recall_html(value: float | None) -> str:
    if value is None:
        return f'<span class="muted">{MISSING}</span>'
    text, grade = recall_cell(value)
    return f'<span class="{grade.value}">{text}</span>'
