"""`A+B`: two (or more) strategies in one context, like CombinedMemory.

Each member builds its own context; the parts are merged in the fixed order
(system, summary, facts, recalled, history, input), every stored message is
sent at most once (history wins over recall), and one budget is shared: whole
turns are kept by priority, the newest history turn, then the recalled turns,
most relevant first, then older history (chatmem.memory.shared_budget); a recalled
message history held is recalled again when its history turn is cut, and each
part's reason says what was sent of what its members chose.
Parameters are addressed as `window.k=3`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from chatmem.context_warnings import OverBudget
from chatmem.memory.assembly import assemble
from chatmem.memory.base import BaseStrategy, ContextRequest, MemoryEnv, Opening
from chatmem.memory.context import PART_ORDER, Context, Message, Part, PartKind, SaidDays
from chatmem.memory.guards import build_guarded, prepare_guarded, update_guarded
from chatmem.memory.reasons import (
    DroppedNote,
    DroppedTurns,
    RecallVerdict,
    SharedBudgetCut,
    turn_run,
)
from chatmem.memory.recall_days import stored_times
from chatmem.memory.shared_budget import fit_budget, joined, message_key, sent_reason
from chatmem.notices import Notice

MERGED_KINDS: tuple[PartKind, ...] = ("history", "summary", "facts", "recalled")
"""Merge order: history first, so a message it holds is not also recalled."""


class CombinedStrategy:
    """Several registered strategies sharing one context and one budget."""

    description = "Parts of each strategy, deduplicated, in one shared budget."

    def __init__(self, members: Sequence[BaseStrategy]) -> None:
        self.members = list(members)
        self.name = "+".join(m.name for m in self.members)
        self.params: Mapping[str, Any] = {
            f"{m.name}.{key}": value for m in self.members for key, value in m.params.items()
        }

    @property
    def needs_embedder(self) -> bool:
        return any(m.needs_embedder for m in self.members)

    @property
    def calls_helper(self) -> bool:
        return any(m.calls_helper for m in self.members)

    @property
    def keeps_state(self) -> bool:
        return any(m.keeps_state for m in self.members)

    @property
    def sends_facts(self) -> bool:
        return any(m.sends_facts for m in self.members)

    @property
    def summarizes(self) -> bool:
        return any(m.summarizes for m in self.members)

    @property
    def recalls_words(self) -> bool:
        return any(m.recalls_words for m in self.members)

    def describe_params(self, *, changed_only: bool = False) -> str:
        return " ".join(
            f"{m.name}.{pair}"
            for m in self.members
            for pair in m.describe_params(changed_only=changed_only).split()
        )

    def changed_params(self) -> dict[str, Any]:
        return {f"{m.name}.{k}": v for m in self.members for k, v in m.changed_params().items()}

    def budget(self, request: ContextRequest) -> int | None:
        own = [b for m in self.members if (b := m.budget(request)) is not None]
        return min(own) if own else request.budget

    def build(self, request: ContextRequest) -> Context:
        budget = self.budget(request)
        shared = request.capped(budget)
        # Each member guarded on its own: a plugin's failure names it, not the combination.
        contexts = [build_guarded(m, shared) for m in self.members]
        merged = merge_parts(contexts)
        parts, history_cut, recalled_cut = fit_budget(request, merged, budget,
                                                      recalled_in_history(contexts, merged),
                                                      said_days(request, contexts))
        parts = sent_reasons(contexts, merged, parts, budget)
        dropped = merged_dropped(request.history.turn_count(), parts)
        if (history_cut or recalled_cut) and budget is not None:
            dropped.append(SharedBudgetCut(turn_run(history_cut), tuple(recalled_cut), budget))
        warnings = [w for c in contexts for w in c.warnings if not isinstance(w, OverBudget)]
        return assemble(request, parts, budget=budget, dropped=dropped,
                        warnings=dict.fromkeys(warnings),
                        recall=recall_rows(contexts, parts, {n for n, _ in recalled_cut}))

    def update(self, env: MemoryEnv) -> list[Notice]:
        return [notice for m in self.members for notice in update_guarded(m, env)]

    def prepare(self, opening: Opening) -> None:
        for m in self.members:  # each guarded on its own, as builds are
            prepare_guarded(m, opening)


def merge_parts(contexts: Sequence[Context]) -> list[Part]:
    """One part per kind; each message once; history in conversation order. The reasons
    are the members' as they chose (`sent_reasons` says what of it is sent)."""
    seen: set[tuple[Any, ...]] = set()
    merged: list[Part] = []
    for kind in MERGED_KINDS:
        found = [p for c in contexts for p in c.parts if p.kind == kind]
        messages: list[Message] = []
        for part in found:
            for message in part.messages:
                if message_key(message) not in seen:
                    seen.add(message_key(message))
                    messages.append(message)
        if kind in ("history", "recalled"):
            messages.sort(key=lambda m: (m.turn or 0, m.id or 0))
        if messages:
            reason = joined(*(p.reason for p in found))
            kept = {m.turn for m in messages}
            scores = tuple((n, score) for p in found for n, score in p.scores if n in kept)
            fact_ids = tuple(dict.fromkeys(i for p in found for i in p.fact_ids))
            merged.append(Part(kind, tuple(messages), reason, scores, fact_ids))
    merged.sort(key=lambda p: PART_ORDER.index(p.kind))
    return merged


def said_days(request: ContextRequest, contexts: Sequence[Context]) -> SaidDays | None:
    """When the messages the members recalled were said, for the lines naming the days
    (None: no member's recall names them, as with retrieval's dates=false). Every member's:
    a message only a plugin recalled, dated by none, is read from the history, else it
    would be sent under an earlier day's line."""
    found = [p.said for c in contexts for p in c.parts if p.kind == "recalled" and p.said]
    if not found:
        return None
    times = {i: t for s in found for i, t in s.times.items()}
    missing = [m for c in contexts for p in c.parts if p.kind == "recalled"
               for m in p.messages if m.id is not None and m.id not in times]
    if missing:
        times.update(stored_times(request.state, missing, request.zone))
    return SaidDays(max(s.today for s in found), times)


def recalled_in_history(contexts: Sequence[Context], merged: Sequence[Part]) -> Part | None:
    """The members' recalled messages merged into history, with their turns' recall scores:
    should the shared budget cut their history turns, they are still recalled messages."""
    history = next((p for p in merged if p.kind == "history"), None)
    if history is None:
        return None
    held = {message_key(m) for m in history.messages}
    found = [p for c in contexts for p in c.parts if p.kind == "recalled"]
    messages = {message_key(m): m for p in found for m in p.messages if message_key(m) in held}
    if not messages:
        return None
    turns = {m.turn for m in messages.values()}
    best: dict[int, float] = {}
    for n, score in (pair for p in found for pair in p.scores if pair[0] in turns):
        best[n] = max(score, best.get(n, score))
    ordered = sorted(messages.values(), key=lambda m: (m.turn or 0, m.id or 0))
    return Part("recalled", tuple(ordered), joined(*(p.reason for p in found)),
                tuple(sorted(best.items())))


def sent_reasons(contexts: Sequence[Context], merged: Sequence[Part], sent: list[Part],
                 budget: int | None) -> list[Part]:
    """The `sent` parts, each reason its members' told what of their choice was sent."""
    offered = {p.kind: {message_key(m) for m in p.messages} for p in merged}
    # A recalled message merged into history is offered to recall again when history's is cut.
    history = {message_key(m) for p in sent if p.kind == "history" for m in p.messages}
    offered["recalled"] = offered.get("recalled", set()) | {
        message_key(m) for c in contexts for p in c.parts if p.kind == "recalled"
        for m in p.messages if message_key(m) not in history}
    told: list[Part] = []
    for part in sent:
        if part.kind not in MERGED_KINDS:
            told.append(part)
            continue
        reasons = [r for c in contexts for p in c.parts if p.kind == part.kind
                   if (r := sent_reason(part.kind, p.reason, p.messages, offered[part.kind],
                                        sent, c.recall, budget)) is not None]
        told.append(dataclasses.replace(part, reason=joined(*reasons)) if reasons else part)
    return told


def recall_rows(contexts: Sequence[Context], sent: Sequence[Part],
                cut: set[int]) -> list[dict[str, Any]]:
    """The members' recall rows; those kept whose message no `sent` part holds (a row
    without an id: whose turn is `cut`) marked cut to fit the shared budget, and those
    another member's history sends marked so: the table then counts as recalled what the
    recalled part holds."""
    ids = {m.id for p in sent for m in p.messages if m.id is not None}
    in_history = {m.id for p in sent if p.kind == "history" for m in p.messages}
    rows = []
    for row in (r for c in contexts for r in c.recall):
        gone = row["turn"] in cut if row.get("id") is None else row["id"] not in ids
        if row["kept"] and gone:
            row = {**row, "kept": False, "why": RecallVerdict.SHARED_BUDGET.value}
        elif row["kept"] and row.get("id") in in_history:
            row = {**row, "why": RecallVerdict.IN_HISTORY.value}
        rows.append(row)
    return rows


def merged_dropped(total: int, parts: Sequence[Part]) -> list[DroppedNote]:
    """Which turns no part sends as history, and how many of them are recalled."""
    history = [m.turn for p in parts if p.kind == "history" for m in p.messages if m.turn]
    first = min(history) if history else total + 1
    if first <= 1:
        return []
    recalled = {m.turn for p in parts if p.kind == "recalled" for m in p.messages if m.turn}
    return [DroppedTurns((1, first - 1), recalled_turns=len(recalled))]
