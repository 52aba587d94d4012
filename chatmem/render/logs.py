"""`chatmem logs` as a table, and money as the user reads it."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from chatmem.config.options import Cost, Spent
from chatmem.render import cost_text, when
from chatmem.store import LogEntry

QUESTION_CHARS = 60
"""How much of each question the table shows: its start, enough to recognise it."""


def spent_text(spent: Spent) -> str:
    """`total 1,234 tokens · $0.0123` (a `+` when some model has no configured price)."""
    text = f"total {spent.tokens:,} tokens"
    if spent.cost is not None:
        text += f" · {cost_text(spent.cost)}" + ("+" if spent.unpriced else "")
    return text


def question_start(text: str, chars: int = QUESTION_CHARS) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= chars else one_line[: chars - 1] + "…"


def tokens_text(entry: LogEntry) -> str:
    """`1,234+56`: tokens sent, plus tokens of the reply."""
    sent = f"{entry.prompt_tokens:,}" if entry.prompt_tokens is not None else "?"
    return sent + (f"+{entry.reply_tokens:,}" if entry.reply_tokens is not None else "")


def logs_table(entries: Sequence[LogEntry], costs: Sequence[Cost | None]) -> RenderableType:
    """Turns, newest (or best-matching) first: when, where, which model and strategy, what it
    cost, and the start of the question; the question column takes what width is left."""
    if not entries:
        return Text("no turns found", style="dim")
    out = Table(header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                padding=(0, 1, 0, 0))
    out.add_column("time", no_wrap=True)
    out.add_column("session", overflow="fold", max_width=16)
    out.add_column("model", overflow="fold", max_width=16)
    out.add_column("strategy", overflow="fold", max_width=14)
    out.add_column("tokens", justify="right", no_wrap=True)
    priced = any(cost is not None for cost in costs)
    if priced:
        out.add_column("cost", justify="right", no_wrap=True)
    out.add_column("question", overflow="ellipsis", no_wrap=True, ratio=1, min_width=12)
    for entry, cost in zip(entries, costs, strict=True):
        status = "" if entry.status == "ok" else f" ({entry.status})"
        row = [when(entry.created_at), f"{entry.session} #{entry.number}", entry.model or "",
               entry.strategy + status, tokens_text(entry)]
        if priced:
            row.append(cost_text(cost) if cost is not None else "")
        row.append(question_start(entry.input))
        out.add_row(*row)
    return out
