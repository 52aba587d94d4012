"""All Rich output: panels, tables, token lines. Core code never prints."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from chatmem.memory.base import Context

PART_STYLES = {
    "system": "magenta",
    "summary": "yellow",
    "facts": "cyan",
    "recalled": "blue",
    "history": "green",
    "input": "bold white",
}


def make_console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def error_line(message: str) -> Text:
    return Text.assemble(("error: ", "bold red"), message)


def notice_line(message: str) -> Text:
    return Text(message, style="dim")


def no_model_panel(message: str) -> Panel:
    return Panel(message, title="no model", border_style="red", expand=False)


def token_line(
    context: Context,
    *,
    approximate: bool,
    estimated: int | None = None,
    reported: int | None = None,
    latency_ms: int | None = None,
    strategy: str | None = None,
) -> Text:
    """`system 12 · history 340 · input 9 = 361 tokens (reported 366) · 0.8 s · window k=5`."""
    mark = "≈" if approximate else ""
    text = Text()
    for i, part in enumerate(context.parts):
        if i:
            text.append(" · ", style="dim")
        text.append(part.kind, style=PART_STYLES.get(part.kind, ""))
        text.append(f" {mark}{part.tokens}")
    total = estimated if estimated is not None else context.tokens
    text.append(f" = {mark}{total} tokens")
    if context.budget:
        text.append(f" of {context.budget}", style="red" if context.over_budget else "dim")
    if reported is not None:
        style = "dim" if reported == total else "yellow"
        text.append(f" (provider reported {reported})", style=style)
    if latency_ms is not None:
        text.append(f" · {latency_ms / 1000:.1f} s", style="dim")
    if strategy:
        text.append(f" · {strategy}", style="dim")
    for warning in context.warnings:
        text.append(f"\n⚠ {warning}", style="bold yellow")
    return text


def context_panel(context: Context, *, approximate: bool, title: str = "prompt") -> Panel:
    """Every message sent, labelled with its part, its tokens and the part's reason."""
    mark = "≈" if approximate else ""
    blocks: list[RenderableType] = []
    for part in context.parts:
        style = PART_STYLES.get(part.kind, "")
        header = Text.assemble(
            (f"{part.kind}", f"bold {style}"),
            (f"  {mark}{part.tokens} tokens", "dim"),
            (f"  {part.reason}", "italic dim"),
        )
        blocks.append(header)
        for message in part.messages:
            label = f"turn {message.turn} " if message.turn else ""
            blocks.append(Text.assemble(
                (f"  {label}{message.role}: ", style),
                (message.content, ""),
                (f"  [{mark}{message.tokens}]", "dim"),
            ))
    if context.dropped:
        blocks.append(Text(f"dropped: {context.dropped}", style="dim red"))
    total = f"{mark}{context.tokens} tokens"
    if context.budget:
        total += f" of {context.budget}"
    return Panel(Group(*blocks), title=title, subtitle=total, border_style="blue")


def table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], title: str | None = None
) -> Table:
    out = Table(title=title, header_style="bold")
    for column in columns:
        out.add_column(column.replace("_", " "), overflow="fold")
    for row in rows:
        out.add_row(*("" if row.get(c) is None else str(row.get(c)) for c in columns))
    return out


def key_values(data: Mapping[str, Any], title: str | None = None) -> Table:
    out = Table(title=title, show_header=False, box=None, padding=(0, 2, 0, 0))
    out.add_column(style="bold")
    out.add_column(overflow="fold")
    for key, value in data.items():
        out.add_row(key, "" if value is None else str(value))
    return out


def transcript(messages: Iterable[Mapping[str, Any]]) -> Group:
    lines = []
    for m in messages:
        style = {"user": "bold green", "assistant": "cyan", "system": "magenta"}.get(m["role"], "")
        lines.append(Text.assemble((f"[{m['turn']}] {m['role']}: ", style), m["content"]))
    return Group(*lines)


def help_table(commands: Mapping[str, str]) -> Table:
    out = Table(show_header=False, box=None, padding=(0, 2, 0, 0))
    out.add_column(style="bold cyan")
    out.add_column()
    for name, text in commands.items():
        out.add_row(name, text)
    return out
