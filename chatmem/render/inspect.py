"""`chatmem inspect` output: one context, part by part, against its budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from chatmem.memory.base import Context
from chatmem.render import PART_STYLES, context_panel, key_values

BAR_WIDTH = 50


def parts_table(context: Context, *, approximate: bool) -> Table:
    mark = "≈" if approximate else ""
    out = Table(header_style="bold", title="parts")
    out.add_column("part")
    out.add_column("messages", justify="right")
    out.add_column("tokens", justify="right")
    out.add_column("reason", overflow="fold")
    for part in context.parts:
        style = PART_STYLES.get(part.kind, "")
        out.add_row(Text(part.kind, style=style), str(len(part.messages)),
                    f"{mark}{part.tokens:,}", part.reason)
    priming = context.tokens - sum(p.tokens for p in context.parts)
    out.add_row(Text("reply priming", style="dim"), "", f"{mark}{priming}",
                Text("fixed chat-format tokens before the reply", style="dim"))
    return out


def budget_bar(context: Context, *, approximate: bool, width: int = BAR_WIDTH) -> Text:
    """A bar coloured by part: the context's tokens against the budget (or its own total)."""
    mark = "≈" if approximate else ""
    total = context.tokens
    scale = max(context.budget or total, total, 1)
    out = Text()
    used = 0
    for part in context.parts:
        cells = round(part.tokens / scale * width)
        out.append("█" * cells, style=PART_STYLES.get(part.kind, ""))
        used += cells
    if context.budget:
        out.append("░" * max(width - used, 0), style="dim")
        share = total / context.budget * 100
        style = "bold red" if context.over_budget else ""
        out.append(f"  {mark}{total:,} of {context.budget:,} tokens ({share:.0f}%)", style=style)
    else:
        out.append(f"  {mark}{total:,} tokens (no budget)")
    return out


def estimate_line(estimated: int | None, reported: int | None, approximate: bool) -> Text:
    mark = "≈" if approximate else ""
    out = Text("estimated ")
    out.append("–" if estimated is None else f"{mark}{estimated:,}")
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
) -> Group:
    """Header facts, the parts table, the budget bar, the exact messages, the rendered prompt."""
    blocks: list[RenderableType] = [
        key_values({k: v for k, v in info.items() if v not in (None, "")}, title=title),
        parts_table(context, approximate=approximate),
        budget_bar(context, approximate=approximate),
        estimate_line(estimated if estimated is not None else context.tokens, reported,
                      approximate),
    ]
    if context.dropped:
        blocks.append(Text(f"dropped: {context.dropped}", style="red"))
    for warning in context.warnings:
        blocks.append(Text(f"⚠ {warning}", style="bold yellow"))
    blocks.append(context_panel(context, approximate=approximate, title="messages sent"))
    if rendered_prompt:
        blocks.append(Panel(Text(rendered_prompt), title="rendered prompt (exact model input)",
                            border_style="magenta"))
    return Group(*blocks)


def summaries_view(rows: Sequence[Mapping[str, Any]]) -> Group:
    """A table of versions, then each version's text in full."""
    table = Table(header_style="bold", title="summary versions")
    for column in ("version", "strategy", "created", "covers", "tokens", "dropped anchors"):
        table.add_column(column, justify="right" if column in ("version", "covers", "tokens")
                         else "left", overflow="fold")
    panels: list[RenderableType] = []
    for row in rows:
        dropped = ", ".join(row["dropped_anchors"])
        table.add_row(str(row["version"]), row["strategy"],
                      row["created_at"][:16].replace("T", " "),
                      f"{row['covered_messages']} msgs", str(row["tokens"]),
                      Text(dropped or "–", style="red" if dropped else "dim"))
        panels.append(Panel(Text(row["text"]), title=f"{row['strategy']} v{row['version']}",
                            title_align="left", border_style=PART_STYLES["summary"]))
    return Group(table, *panels)
