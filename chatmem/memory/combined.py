"""`A+B`: two (or more) strategies in one context, like CombinedMemory.

Each member builds its own context; the parts are merged in the fixed order
(system, summary, facts, recalled, history, input), every stored message is
sent at most once (history wins over recall), and one budget is shared: if
the merged context is over it, the oldest history turns go first, then recalled
turns, least relevant first, and last the newest history turn (a member with a
budget of its own larger than the shared one may have kept a turn that alone
exceeds it). A recalled turn answers the question in hand; an old recent turn
may not.
Parameters are addressed as `window.k=3`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chatmem.memory.assembly import assemble, fixed_tokens
from chatmem.memory.base import (
    BaseStrategy,
    ContextRequest,
    MemoryEnv,
    build_guarded,
    update_guarded,
)
from chatmem.memory.context import PART_ORDER, Context, Message, Part, PartKind
from chatmem.memory.reasons import (
    DroppedNote,
    DroppedTurns,
    Merged,
    RecallVerdict,
    SharedBudgetCut,
    turn_run,
)
from chatmem.notices import Notice, OverBudget

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
        parts = merge_parts(contexts)
        parts, history_cut, recalled_cut = fit_budget(request, parts, budget)
        dropped = merged_dropped(request.history.turn_count(), parts)
        if (history_cut or recalled_cut) and budget is not None:
            dropped.append(SharedBudgetCut(turn_run(history_cut), tuple(recalled_cut), budget))
        warnings = [w for c in contexts for w in c.warnings if not isinstance(w, OverBudget)]
        return assemble(request, parts, budget=budget, dropped=dropped,
                        warnings=dict.fromkeys(warnings),
                        recall=recall_rows(contexts, {n for n, _ in recalled_cut}))

    def update(self, env: MemoryEnv) -> list[Notice]:
        return [notice for m in self.members for notice in update_guarded(m, env)]


def _identity(message: Message) -> tuple[Any, ...]:
    return ("id", message.id) if message.id is not None else (message.role, message.content)


def merge_parts(contexts: Sequence[Context]) -> list[Part]:
    """One part per kind; each message once; history in conversation order."""
    seen: set[tuple[Any, ...]] = set()
    merged: list[Part] = []
    for kind in MERGED_KINDS:
        found = [p for c in contexts for p in c.parts if p.kind == kind]
        messages: list[Message] = []
        for part in found:
            for message in part.messages:
                if _identity(message) not in seen:
                    seen.add(_identity(message))
                    messages.append(message)
        if kind in ("history", "recalled"):
            messages.sort(key=lambda m: (m.turn or 0, m.id or 0))
        if messages:
            reasons = tuple(dict.fromkeys(p.reason for p in found))
            reason = reasons[0] if len(reasons) == 1 else Merged(reasons)
            kept = {m.turn for m in messages}
            scores = tuple((n, score) for p in found for n, score in p.scores if n in kept)
            fact_ids = tuple(dict.fromkeys(i for p in found for i in p.fact_ids))
            merged.append(Part(kind, tuple(messages), reason, scores, fact_ids))
    merged.sort(key=lambda p: PART_ORDER.index(p.kind))
    return merged


def recall_rows(contexts: Sequence[Context], cut: set[int]) -> list[dict[str, Any]]:
    """The members' recall rows; those of recalled turns cut to fit marked so."""
    rows = []
    for row in (r for c in contexts for r in c.recall):
        if row["kept"] and row["turn"] in cut:
            row = {**row, "kept": False, "why": RecallVerdict.SHARED_BUDGET.value}
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


def fit_budget(
    request: ContextRequest, parts: list[Part], budget: int | None
) -> tuple[list[Part], list[int], list[tuple[int, float]]]:
    """Drop whole turns until the context fits: the oldest history turns but the newest,
    then recalled turns, lowest score first (the older among equals), then the newest.

    Returns the parts, the history turns dropped and the recalled (turn, score)s dropped.
    """
    history_cut: list[int] = []
    recalled_cut: list[tuple[int, float]] = []
    if budget is None:
        return parts, history_cut, recalled_cut

    fixed = fixed_tokens(request)

    def over() -> bool:
        return fixed + sum(p.tokens for p in parts) > budget

    def without(kind: PartKind, turn: int) -> None:
        index = next(i for i, p in enumerate(parts) if p.kind == kind)
        part = parts[index]
        rest = tuple(m for m in part.messages if (m.turn or 0) != turn)
        if rest:
            scores = tuple((n, s) for n, s in part.scores if n != turn)
            parts[index] = Part(kind, rest, part.reason, scores)
        else:
            del parts[index]

    at = next((i for i, p in enumerate(parts) if p.kind == "history"), None)
    if at is not None and over():
        # One pass, oldest first: a whole history (buffer's) may be thousands of turns.
        history = parts[at]
        per_turn: dict[int, int] = {}
        for m in history.messages:
            per_turn[m.turn or 0] = per_turn.get(m.turn or 0, 0) + m.tokens
        excess = fixed + sum(p.tokens for p in parts) - budget
        for turn in sorted(per_turn)[:-1]:
            if excess <= 0:
                break
            history_cut.append(turn)
            excess -= per_turn[turn]
        gone = set(history_cut)
        parts[at] = Part("history", tuple(m for m in history.messages if (m.turn or 0) not in gone),
                         history.reason, tuple((n, s) for n, s in history.scores if n not in gone))
    while over():
        recalled = next((p for p in parts if p.kind == "recalled"), None)
        if recalled is None:
            break
        score = dict(recalled.scores)
        turns = sorted({m.turn or 0 for m in recalled.messages},
                       key=lambda n: (score.get(n, float("-inf")), n))
        recalled_cut.append((turns[0], score.get(turns[0], 0.0)))
        without("recalled", turns[0])
        # Recall keeps single messages: cutting a question's turn can leave the next turn's
        # reply opening the part, and a context never opens on a reply.
        while (recalled := next((p for p in parts if p.kind == "recalled"), None)) and (
                recalled.messages[0].role != "user"):
            turn = recalled.messages[0].turn or 0
            recalled_cut.append((turn, dict(recalled.scores).get(turn, 0.0)))
            without("recalled", turn)
    # Last, the newest turn: the budget is a promise whenever the system prompt and the
    # input fit, and a member with a budget of its own larger than the shared one (tokens,
    # summary-buffer) may have kept a turn that alone exceeds it.
    while over() and (newest := next((p for p in parts if p.kind == "history"), None)):
        turn = max(m.turn or 0 for m in newest.messages)
        history_cut.append(turn)
        without("history", turn)
    return parts, sorted(history_cut), sorted(recalled_cut)
