"""The REPL's bottom toolbar as text: its fields, and those that fit a narrow terminal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text

from chatmem.render.counts import counted
from chatmem.render.fields import Field, fitted, joined
from chatmem.render.logs import spent_parts
from chatmem.tokens import format_count

if TYPE_CHECKING:
    from chatmem.config.options import Spent
    from chatmem.memory.vector_backlog import IndexingStatus

TOOLBAR_RANKS = {"context": 9, "cost": 8, "strategy": 7, "indexing": 6, "model": 5,
                 "total": 4, "session": 3}
"""What a narrow terminal keeps of the toolbar, most important first: how full the
context was and what the chat cost. The prompt itself names the session."""


@dataclass(frozen=True)
class ContextUsage:
    """How full a context was: its tokens and budget, and whether they were counted with a
    tokenizer that is not the model's own (shown with ≈, as the turn's token line is)."""

    tokens: int
    budget: int | None
    approximate: bool = False


@dataclass(frozen=True)
class ToolbarState:
    """What the toolbar shows of a chat."""

    session: str
    strategy: str
    model: str
    """`provider:model`."""
    usage: ContextUsage | None
    """The last context's tokens and budget; None before the first turn."""
    spent: Spent
    indexing: IndexingStatus | None
    turns: int = 0
    """The history's turns when `usage` is None: an imported or forked session has turns
    but no context sent from it yet."""


def toolbar_line(state: ToolbarState, width: int | None = None) -> str:
    """` session t · window · openai:gpt-4o · last context 364 / 4,000 tokens · …`, with
    the fields that fit `width` columns whole (None: all of them)."""
    ranks = TOOLBAR_RANKS
    fields = [(f"session {state.session}", ranks["session"]),
              (state.strategy, ranks["strategy"]), (state.model, ranks["model"])]
    if state.usage is not None:
        usage = state.usage
        budget = f" / {usage.budget:,} tokens" if usage.budget else " tokens"
        fields.append((f"last context {format_count(usage.tokens, usage.approximate)}{budget}",
                       ranks["context"]))
    else:
        fields.append((f"{counted(state.turns, 'turn')}, no context "
                       "sent yet" if state.turns else "no turn yet", ranks["context"]))
    if state.spent.tokens:
        total, cost = spent_parts(state.spent)
        fields.append((total, ranks["total"]))
        if cost is not None:
            fields.append((cost, ranks["cost"]))
    indexing = indexing_text(state.indexing)
    if indexing is not None:
        fields.append((indexing, ranks["indexing"]))
    # One column of padding at each end, as the toolbar has always had.
    shown = fitted([Field(Text(text), rank) for text, rank in fields],
                   None if width is None else width - 2)
    return f" {joined(shown).plain} "


def indexing_text(status: IndexingStatus | None) -> str | None:
    """The toolbar's part for the vector backlog; None when nothing waits."""
    if status is not None and status.elsewhere is not None:
        return f"indexing in process {status.elsewhere.pid}"
    if status is None or not status.missing:
        return None
    if not status.running:
        return f"{status.missing:,} not indexed"
    done = f" ({status.embedded:,} embedded)" if status.embedded else ""
    return f"indexing, {status.missing:,} left{done}"
