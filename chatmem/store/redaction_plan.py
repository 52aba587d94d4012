"""What a purge changes, as values: where it changed stored text (`Place`), the rows it
changed (`Redaction`), and the plan a dry run reports and the real run applies
(`RewritePlan`). The SQL that finds and rewrites them is chatmem.store.redaction's."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Place(Enum):
    """Where a purge changed stored text (one count per row)."""

    MESSAGES = "messages"
    TURNS = "turns"
    SUMMARIES = "summaries"
    ANCHORS = "anchors"
    STRATEGY_STATE = "strategy_state"
    SYSTEM_PROMPTS = "system_prompts"
    PROBES = "probes"
    FACTS = "facts"
    FACTS_DELETED = "facts_deleted"
    FACT_HISTORY = "fact_history"
    VECTORS = "vectors"


@dataclass
class Redaction:
    """The rows a purge changed, by place, and the sessions they belong to."""

    rows: dict[Place, set[Any]] = field(default_factory=dict)
    sessions: set[int] = field(default_factory=set)
    deleted_facts: dict[int, str] = field(default_factory=dict)
    """Other facts deleted as the rewrite left nothing of their own in their value (a
    marker every context would send): id → key, as rewritten."""
    dropped_pins: list[str] = field(default_factory=list)
    """Drift-guard pins dropped as the rewrite left nothing of their own in them (a marker
    every turn would send): their ids (`p3`), or "" for a pin stored before pins had ids."""
    distinct_keys: dict[int, str] = field(default_factory=dict)
    """Other facts whose rewritten key was another live fact's of their owner: id → the key
    made distinct (`[forgotten] birthday (2)`, chatmem.store.rewritten_keys)."""

    def add(self, place: Place, row: Any) -> None:
        self.rows.setdefault(place, set()).add(row)

    @property
    def counts(self) -> dict[Place, int]:
        return {place: len(rows) for place, rows in self.rows.items() if rows}


@dataclass
class RewritePlan:
    """What a rewrite changes, row by row (`RedactionTables.plan_rewrite`): read first, so a
    dry run can report it and the real run applies the very same plan."""

    messages: list[tuple[int, str, str]] = field(default_factory=list)
    """(message id, new content, role)."""
    changed_sessions: list[int] = field(default_factory=list)
    """Sessions whose messages change: their vectors and token counts go."""
    updates: dict[tuple[Any, ...], str] = field(default_factory=dict)
    """(table, column, *row key) → new text."""
    redaction: Redaction = field(default_factory=Redaction)
