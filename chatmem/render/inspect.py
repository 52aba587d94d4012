"""`chatmem inspect` output: one context, part by part, against its budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import tzinfo
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from chatmem.memory.context import Context
from chatmem.render import (
    PART_STYLES,
    PRIMING_NOTE,
    TEMPLATE_NOTE,
    context_panel,
    key_values,
    printable,
    template_extra,
    when,
)
from chatmem.render.counts import counted
from chatmem.render.layout import Fitted, Flow, Label, Narrowing
from chatmem.render.notices import notice_text
from chatmem.render.reasons import dropped_line, kept_text, reason_text
from chatmem.render.summary import coverage
from chatmem.tokens import format_count

BAR_WIDTH = 50


def parts_table(context: Context, *, approximate: bool, estimated: int | None = None,
                rendered: bool = False) -> RenderableType:
    """Each part: its messages, tokens and why it is sent, then reply priming and what the
    chat template adds. Narrower than the table's least (the reason at 30 columns), a card
    per part: Rich would squeeze the reason to a dozen columns, 30 lines for one recall."""
    out = Table(header_style="bold", title="parts")
    out.add_column("part", no_wrap=True)
    out.add_column("messages", justify="right")
    out.add_column("tokens", justify="right")
    out.add_column("reason", overflow="fold", min_width=30)
    cards: list[RenderableType] = [Text("parts", style="bold")]
    labels: list[Text] = []

    def add(kind: Text, messages: int | None, tokens: str, reason: Text) -> None:
        labels.append(kind)
        out.add_row(kind, "" if messages is None else str(messages), tokens, reason)
        shown = [] if messages is None else [counted(messages, "message")]
        cards.extend([_details([*shown, f"{tokens} tokens"], head=kind),
                      Padding(reason, (0, 0, 0, 2))])

    for part in context.parts:
        add(Text(part.kind, style=PART_STYLES.get(part.kind, "")), len(part.messages),
            format_count(part.tokens, approximate), Text(reason_text(part.reason)))
    add(Text("reply priming", style="dim"), None, format_count(context.priming, approximate),
        Text(PRIMING_NOTE, style="dim"))
    extra = template_extra(context, estimated)
    if extra:
        where = "the rendered prompt below shows it" if rendered else (
            "the provider's rendered prompt shows it")
        add(Text("chat template", style="magenta"), None, f"{extra:+,}",
            Text(f"text the chat template adds (e.g. a default system prompt); {where}",
                 style="dim"))
    # Measured at its longest word, `reply priming` would let Fitted pick a table that
    # Rich then cuts off at the right, as it does not wrap the part column to its least.
    out.columns[0].min_width = max(cell.cell_len for cell in labels)
    return Fitted(out, Group(*cards))


class BudgetBar:
    """A bar coloured by part: the context's tokens against the budget (or its own total).

    The label never wraps: in a narrow terminal the bar is drawn shorter instead.
    """

    def __init__(self, context: Context, *, approximate: bool, width: int = BAR_WIDTH,
                 estimated: int | None = None) -> None:
        self.context, self.approximate, self.width = context, approximate, width
        self.estimated = estimated

    def label(self) -> Text:
        context = self.context
        total = self.estimated if self.estimated is not None else context.tokens
        if not context.budget:
            return Text(f"{format_count(total, self.approximate)} tokens (no budget)")
        share = total / context.budget * 100
        return Text(f"{format_count(total, self.approximate)} of {context.budget:,} tokens"
                    f" ({share:.0f}%)",
                    style="bold red" if total > context.budget else "")

    def bar(self, width: int) -> Text:
        context = self.context
        total = self.estimated if self.estimated is not None else context.tokens
        scale = max(context.budget or total, total, 1)
        out = Text()
        used = 0
        extra = max(template_extra(context, self.estimated), 0)
        for tokens, style in [*((p.tokens, PART_STYLES.get(p.kind, "")) for p in context.parts),
                              (extra, "magenta")]:
            cells = min(round(tokens / scale * width), width - used)
            out.append("█" * cells, style=style)
            used += cells
        if context.budget:
            out.append("░" * max(width - used, 0), style="dim")
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        label = self.label()
        width = max(min(self.width, options.max_width - label.cell_len - 2), 0)
        yield Text.assemble(self.bar(width), "  " if width else "", label)


def budget_bar(context: Context, *, approximate: bool, width: int = BAR_WIDTH,
               estimated: int | None = None) -> BudgetBar:
    return BudgetBar(context, approximate=approximate, width=width, estimated=estimated)


def estimate_line(estimated: int | None, reported: int | None, approximate: bool,
                  label: str = "estimated") -> Text:
    out = Text(f"{label} ")
    out.append("–" if estimated is None else format_count(estimated, approximate))
    out.append(" · provider reported ")
    if reported is None:
        out.append("–", style="dim")
    else:
        out.append(f"{reported:,}")
        if estimated is not None and reported != estimated:
            out.append(f" ({reported - estimated:+,})", style="yellow")
    return out


def inspect_view(
    info: Mapping[str, Any],
    context: Context,
    *,
    approximate: bool,
    estimated: int | None = None,
    reported: int | None = None,
    rendered_prompt: str | None = None,
    title: str = "context",
    estimate_label: str = "estimated",
    recall_texts: Mapping[int, str] | None = None,
) -> Group:
    """Header facts, the parts table, the budget bar, the exact messages, the rendered prompt."""
    blocks: list[RenderableType] = [
        key_values({k: v for k, v in info.items() if v not in (None, "")}, title=title),
        parts_table(context, approximate=approximate, estimated=estimated,
                    rendered=bool(rendered_prompt)),
        budget_bar(context, approximate=approximate, estimated=estimated),
        estimate_line(estimated if estimated is not None else context.tokens, reported,
                      approximate, label=estimate_label),
    ]
    if context.dropped:
        blocks.append(Text(dropped_line(context.dropped), style="red"))
    for warning in context.warnings:
        blocks.append(Text(f"⚠ {notice_text(warning)}", style="bold yellow"))
    note = ("tokens the chat template adds around the messages (e.g. a default system"
            " prompt); the rendered prompt below shows them") if rendered_prompt else TEMPLATE_NOTE
    if context.recall:
        blocks.append(recall_table(context, recall_texts or {}))
    blocks.append(context_panel(context, approximate=approximate, title="messages sent",
                                estimated=estimated, template_note=note))
    if rendered_prompt:
        blocks.append(Panel(Text(rendered_prompt), title="rendered prompt (exact model input)",
                            border_style="magenta"))
    return Group(*blocks)


RECALL_TITLE = "recall: candidates ranked (scores 0–1 + time and speaker gains, bm25 raw)"
"""words and dense are scaled 0–1; a message dated when the input names gains `time_weight`
in words, one whose speaker it names `speaker` in fused: 1.06 is no error."""
SCORES = ("bm25", "words", "dense", "fused")


def recall_table(context: Context, texts: Mapping[int, str]) -> RenderableType:
    """How recall ranked what it kept and the best of what it left out, and why (`texts`:
    what each candidate said, by id).

    Made to fit 80 columns: no vertical rules, the role inside the message cell, numbers
    never cut, and the message (one line, cut with …) giving way first when room is short.
    Narrower than the table's least (about 62 columns), a card per candidate: Rich would
    squeeze "kept / why" and the message to nothing.
    """
    out = Table(header_style="bold", title=RECALL_TITLE,
                box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, collapse_padding=True)
    for column in ("turn", *SCORES, "tokens"):
        out.add_column(column, justify="right", no_wrap=True, min_width=len(column))
    out.add_column("kept / why", overflow="fold", min_width=14)
    out.add_column("message", min_width=12)
    cards: list[RenderableType] = [Text(RECALL_TITLE, style="bold")]
    for row in context.recall:
        # A recalled row says what brought it up: `kept, meaning`.
        why = Text(kept_text(row), style="green" if row.get("kept") is True else "dim")
        # Read as stored: a plugin's rows, stored before they were checked, may lack a key.
        found = row.get("id")
        said = texts.get(found, "") if isinstance(found, int) else ""
        role = row.get("role")
        role = role if isinstance(role, str) else "?"
        message = Text(f"{role}: {printable(said)}", no_wrap=True, overflow="ellipsis")
        message.stylize("dim", 0, len(role) + 1)
        turn = row.get("turn")
        turn_text = "–" if turn is None else str(turn)
        scores = [_number(row, key) for key in SCORES]
        tokens = _number(row, "tokens", "{:,}")
        out.add_row(turn_text, *scores, tokens, why, _Cut(message))
        cards += [Text.assemble((f"turn {turn_text}  ", "bold"), why),
                  Padding(_details([*(f"{k} {v}" for k, v in zip(SCORES, scores, strict=True)),
                                    f"{tokens} tokens"]), (0, 0, 0, 2)),
                  Padding(message, (0, 0, 0, 2))]
    return Fitted(out, Group(*cards))


class _Cut:
    """A one-line cell cut with … to any width: Rich measures a Text's narrowest by its
    longest word (a Chinese sentence is one), which no cut needs."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, self.text.cell_len).clamp(max_width=options.max_width)


def _details(fields: Sequence[str], head: Text | None = None) -> Flow:
    """A card's details, dim, wrapped between fields, never inside one (after `head`)."""
    return Flow([*([head] if head is not None else []),
                 *(Text(field, style="dim") for field in fields)], gap=3)


def _number(row: Mapping[str, Any], key: str, shape: str = "{:.2f}") -> str:
    value = row.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return shape.format(value)
    return "–"


def summaries_view(rows: Sequence[Mapping[str, Any]], zone: tzinfo | None = None) -> Group:
    """A table of versions, then each version's text in full; times in `zone` (`when`).
    Narrower than the table's least, a card per version: Rich would squeeze the time,
    the turns covered and the dropped anchors to nothing."""

    def build(width: int | None) -> Table:
        table = Table(header_style="bold", title="summary versions")
        for column in ("version", "strategy", "created", "covers", "tokens",
                       "dropped anchors"):
            table.add_column(column, justify="right" if column in ("version", "covers",
                                                                   "tokens") else "left",
                             overflow="fold", min_width=min(len(column), 10),
                             no_wrap=column in ("version", "strategy", "tokens"))
        for row in rows:
            dropped = ", ".join(row["dropped_anchors"])
            # A Label: the strategy wraps between names if it must, never `summary-buffe`/`r`.
            table.add_row(str(row["version"]), Label(row["strategy"], width=width),
                          when(row["created_at"], zone),
                          coverage(row.get("covered_turn")), f"{row['tokens']:,}",
                          Text(dropped or "–", style="red" if dropped else "dim"))
        return table

    cards: list[RenderableType] = [Text("summary versions", style="bold")]
    for row in rows:
        dropped = ", ".join(row["dropped_anchors"])
        cards += [Text.assemble((f"v{row['version']} ", "bold"), row["strategy"]),
                  Padding(_details([when(row["created_at"], zone),
                                    coverage(row.get("covered_turn")),
                                    f"{row['tokens']:,} tokens"]), (0, 0, 0, 2))]
        if dropped:
            cards.append(Padding(Text(f"dropped anchors: {dropped}", style="red"),
                                 (0, 0, 0, 2)))
    panels: list[RenderableType] = [
        Panel(Text(row["text"]), title=f"{row['strategy']} v{row['version']}",
              title_align="left", border_style=PART_STYLES["summary"]) for row in rows]
    return Group(Fitted(Narrowing(build, [row["strategy"] for row in rows]), Group(*cards)),
                 *panels)
