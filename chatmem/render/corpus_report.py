"""The HTML report of `chatmem eval DIR`: every transcript of a folder, and all of them together.

It takes `eval DIR --json` (docs/chatmem.schema.json, $defs/corpus), so the
page shows exactly what the JSON holds, laid out and styled as the report of
one transcript (chatmem.render.report): a table of one row per strategy over
the whole folder (micro recall, mean and max context tokens), the recall
against cost of those rows, and a table of one row per transcript with each
strategy's recall and mean context, ending in the row of the whole folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from chatmem.evaluation.recording import Tokenizer
from chatmem.evaluation.scoring import lower_recall
from chatmem.render.cells import number
from chatmem.render.corpus import tokenizers_text
from chatmem.render.report import Column, recall_html, strategy_columns, strategy_table
from chatmem.render.report_charts import recall_figure
from chatmem.render.report_page import escape, page


def corpus_report(data: dict[str, Any]) -> str:
    """The whole page for one `eval DIR --json` object."""
    title = f"chatmem eval of {data['source']}"
    totals = [_as_run(row) for row in data["aggregate"]]
    blocks = [_header(data, title)]
    if totals:
        blocks += [f"<h2>Every transcript together</h2>{_totals_table(totals)}",
                   recall_figure(totals)]
    if data["transcripts"]:
        blocks.append(f"<h2>Each transcript</h2>{_transcripts_table(data, totals)}")
    blocks.append(_errors(data["errors"]))
    return page(title, blocks)


def _as_run(row: dict[str, Any]) -> dict[str, Any]:
    """An aggregate row in the shape of one transcript's run, as the shared tables read it."""
    return {"strategy": {"label": row["label"]}, "total": row,
            "eval": {"id_recall": row["id_recall"], "text_recall": row["text_recall"],
                     "context_tokens": row["context_tokens"]}}


def _header(data: dict[str, Any], title: str) -> str:
    transcripts = data["transcripts"]
    probes = sum(t["probes"] for t in transcripts)
    facts = [f"{len(transcripts):,} of {data['files']:,} transcripts evaluated",
             f"{probes:,} probes"]
    if not data["complete"]:
        facts.append("<b>stopped before the end</b>: what finished is shown")
    counted = [(PurePath(t["source"]).name, Tokenizer(**t["tokenizer"])) for t in transcripts
               if t.get("tokenizer")]
    zone = (f"; days read in time zone <b>{escape(data['timezone'])}</b>"
            if data.get("timezone") else "")
    note = (f'<p class="note">Counted with {escape(tokenizers_text(counted))}{zone}. Recall'
            " over the folder is micro recall: every expected id and text of every probe counts"
            " once.</p>"
            if counted else "")
    return (f"<header><h1>{escape(title)}</h1><p class=\"muted\">{' · '.join(facts)}</p>"
            f"{note}</header>")


def _totals_table(totals: Sequence[dict[str, Any]]) -> str:
    columns: list[Column] = [
        ("files", lambda r: number(r["total"]["transcripts"])),
        ("probes", lambda r: number(r["total"]["probes"])),
        ("id recall", lambda r: recall_html(r["total"]["id_recall"])),
        ("text recall", lambda r: recall_html(r["total"]["text_recall"])),
        ("mean recall", lambda r: recall_html(r["total"]["mean_recall"])),
        ("context mean", lambda r: number(r["total"]["context_tokens"]["mean"], 1)),
        ("context max", lambda r: number(r["total"]["context_tokens"]["max"])),
        ("turn mean", lambda r: number(r["total"]["prompt_tokens_mean"], 1)),
    ]
    return strategy_table(totals, columns, "id and text recall over every expected id and "
                          "text of every probe; mean recall: the mean of the transcripts' "
                          "own; context tokens at the probes; turn mean: prompt tokens per "
                          "turn")


def _transcripts_table(data: dict[str, Any], totals: Sequence[dict[str, Any]]) -> str:
    labels = [t["strategy"]["label"] for t in totals] or [
        s["strategy"]["label"] for s in data["transcripts"][0]["strategies"]]
    head, key = strategy_columns(labels)
    rows = []
    for transcript in data["transcripts"]:
        runs = {s["strategy"]["label"]: s["eval"] for s in transcript["strategies"]}
        name = escape(PurePath(transcript["source"]).name)
        if transcript.get("title"):
            name += f' <span class="muted">· {escape(str(transcript["title"]))}</span>'
        cells = [f'<th scope="row">{name}</th>',
                 f'<td data-label="turns">{number(transcript["turns"])}</td>',
                 f'<td data-label="probes">{number(transcript["probes"])}</td>']
        cells += [_cell(label, runs.get(label)) for label in labels]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    if totals:
        turns = sum(t["turns"] for t in data["transcripts"])
        cells = [f'<th scope="row">all {len(data["transcripts"]):,}</th>',
                 f'<td data-label="turns">{number(turns)}</td>',
                 f'<td data-label="probes">{number(totals[0]["total"]["probes"])}</td>']
        cells += [_cell(t["strategy"]["label"], t["eval"]) for t in totals]
        rows.append(f'<tr class="total">{"".join(cells)}</tr>')
    return (key + '<table class="reflow"><caption>recall (the lower of id and text recall) '
            "· mean context tokens at the probes; the last row: every transcript together"
            '</caption><thead><tr><th scope="col">transcript</th><th scope="col">turns</th>'
            f'<th scope="col">probes</th>{head}</tr></thead><tbody>{"".join(rows)}'
            "</tbody></table>")


def _cell(label: str, result: dict[str, Any] | None) -> str:
    if result is None:
        return f'<td data-label="{escape(label)}">{recall_html(None)}</td>'
    recall = lower_recall(result["id_recall"], result["text_recall"])
    tokens = number(result["context_tokens"]["mean"], 1)
    return (f'<td data-label="{escape(label)}">{recall_html(recall)}'
            f' <span class="muted">· {tokens}</span></td>')


def _errors(errors: Sequence[dict[str, Any]]) -> str:
    if not errors:
        return ""
    items = "".join(f"<li><b>{escape(PurePath(e['path']).name)}</b>: {escape(e['error'])}</li>"
                    for e in errors)
    return f"<h2>Not evaluated ({len(errors):,})</h2><ul>{items}</ul>"
