"""A context's warnings (over budget, a summary behind, recall by words alone), as values.

They are stored with the turn: `warning_json` and `warning_from_json` tag them by kind; a
warning stored as text by an older version comes back as `StoredWarning`. Only
chatmem.render.notices words them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chatmem.field_types import fitting


@dataclass(frozen=True)
class OverBudget:
    """The context takes `tokens`, over `budget`; `fixed`: the system prompt and input alone
    (with the files attached to it when `attached`)."""

    tokens: int
    budget: int
    fixed: bool = False
    attached: bool = False


@dataclass(frozen=True)
class SummaryBehind:
    """The summary is behind: turns `first`..`last` are sent unsummarized (0, 0: none);
    turns `waiting_first`..`waiting_last` (0, 0: none), older, are not sent at all: they
    did not fit the budget and wait for the summary to catch up."""

    first: int
    last: int
    waiting_first: int = 0
    waiting_last: int = 0


@dataclass(frozen=True)
class EmbeddingFailed:
    """Embedding the input failed (`error`), so recall ranked by words only; `embedder`:
    the registered embedder whose code raised, for a front end to name its plugin."""

    error: str
    embedder: str | None = None


@dataclass(frozen=True)
class StoredWarning:
    """A warning an older version stored as text: shown as it was written."""

    text: str


ContextWarning = OverBudget | SummaryBehind | EmbeddingFailed | StoredWarning

WARNING_KINDS: dict[str, type[OverBudget | SummaryBehind | EmbeddingFailed]] = {
    "over_budget": OverBudget, "summary_behind": SummaryBehind,
    "embedding_failed": EmbeddingFailed,
}


def warning_json(warning: ContextWarning) -> dict[str, Any] | str:
    """`warning` as stored with the turn: {"kind": …, its values}."""
    if isinstance(warning, StoredWarning):
        return warning.text
    kind = next(k for k, cls in WARNING_KINDS.items() if isinstance(warning, cls))
    return {"kind": kind, **dataclasses.asdict(warning)}


def warning_from_json(data: Mapping[str, Any] | str) -> ContextWarning:
    """A stored warning back as a value; text (older versions) as a StoredWarning."""
    if isinstance(data, str):
        return StoredWarning(data)
    values = dict(data)
    cls = WARNING_KINDS.get(values.pop("kind", ""))
    try:
        warning = cls(**values) if cls else StoredWarning(str(data))
    except TypeError:  # values a newer version added
        return StoredWarning(str(data))
    # Values of other types (a hand's edit, another role's SQL) are no warning to word.
    return warning if fitting(warning) else StoredWarning(str(data))
