"""Counts and lists as every line render, the REPL and the CLI print words them."""

from __future__ import annotations

from collections.abc import Sequence


def listed(items: Sequence[str], most: int = 3) -> str:
    """'a, b, c …': the first `most` items, and an ellipsis when there are more."""
    return ", ".join(items[:most]) + (" …" if len(items) > most else "")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 turn`, `2 turns`, `1,200 turns`, `2 summaries` (`plural` where it is not the noun
    and an s): every count with its noun that render, the REPL and the CLI print."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
