"""Tables of facts: id, key, value, scope, where it came from and how old it is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

FACT_COLUMNS = ("id", "key", "value", "scope", "owner", "source", "age")


def age(stamp: str | None, now: datetime | None = None) -> str:
    """'3 min', '2 h', '5 d' since an ISO timestamp."""
    if not stamp:
        return ""
    then = datetime.fromisoformat(stamp)
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = max(0, int(((now or datetime.now(UTC)) - then).total_seconds()))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def fact_row(fact: Any, owner: str | None = None) -> dict[str, Any]:
    """A FactRecord as a plain row, for tables and --json."""
    source = f"turn {fact.source_turn}" if fact.source_turn is not None else "/remember"
    return {
        "kind": "fact",
        "id": fact.id,
        "key": fact.key,
        "value": fact.value,
        "scope": fact.scope,
        "owner": owner if owner is not None else (fact.user or fact.session_id),
        "source": source,
        "source_turn": fact.source_turn,
        "source_message_id": fact.source_message_id,
        "created_at": fact.created_at,
        "updated_at": fact.updated_at,
        "deleted_at": fact.deleted_at,
    }


def pinned_row(pin: Any, owner: str, pinned_at: str | None = None) -> dict[str, Any]:
    """A drift-guard pin (chatmem.memory.pins.PinnedFact) as a row like a fact's."""
    return {
        "kind": "pinned",
        "id": pin.ref,
        "key": "(pinned)",
        "value": pin.text,
        "scope": "session",
        "owner": owner,
        "source": pin.source,
        "strategy": pin.strategy,
        "summary_version": pin.version,
        "created_at": pinned_at,
        "updated_at": pinned_at,
    }


def facts_table(rows: Sequence[Mapping[str, Any]], title: str | None = "facts") -> RenderableType:
    """Wide (CJK) characters are measured by Rich, so columns stay aligned."""
    if not rows:
        return Text("no facts yet: state them in the chat, or /remember KEY: VALUE", style="dim")
    out = Table(title=title, header_style="bold")
    for column in FACT_COLUMNS:
        out.add_column(column, overflow="fold", style="cyan" if column == "key" else None)
    for row in rows:
        cells = {**row, "age": age(row.get("updated_at"))}
        out.add_row(*("" if cells.get(c) is None else str(cells[c]) for c in FACT_COLUMNS))
    return out
