"""Putting a context together: the fixed parts, the newest turns that fit, and honest notes
on the budget and on what was dropped. Shared by every strategy's build."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from chatmem.memory.base import ContextRequest
from chatmem.memory.context import FIXED_KINDS, PART_ORDER, Context, Part
from chatmem.memory.history_view import HistoryTurn
from chatmem.notices import ContextWarning, OverBudget


def system_part(request: ContextRequest) -> Part | None:
    message = request.system_message
    return Part("system", (message,), "system prompt") if message else None


def files_part(request: ContextRequest) -> Part | None:
    if not request.attached:
        return None
    count = len(request.attached)
    return Part("files", request.attached,
                f"{count} attached file{'s' if count > 1 else ''}, quoted as data (always sent)")


def input_part(request: ContextRequest) -> Part:
    return Part("input", (request.input,), "the new user input (always sent)")


def assemble(
    request: ContextRequest,
    middle: Iterable[Part | None],
    *,
    budget: int | None = None,
    dropped: str | None = None,
    warnings: Iterable[ContextWarning] = (),
    recall: Iterable[dict[str, Any]] = (),
) -> Context:
    """Put the parts in their fixed order and check the budget honestly."""
    parts = [p for p in (system_part(request), *middle, files_part(request),
                         input_part(request)) if p is not None]
    parts.sort(key=lambda p: PART_ORDER.index(p.kind))
    notes = list(warnings)
    priming = request.counter.priming
    context = Context(tuple(parts), budget, dropped, priming=priming)
    if budget is not None and context.tokens > budget:
        fixed = sum(p.tokens for p in parts if p.kind in FIXED_KINDS) + priming
        if fixed > budget:
            notes.append(OverBudget(fixed, budget, fixed=True, attached=bool(request.attached)))
        else:
            notes.append(OverBudget(context.tokens, budget))
    return Context(tuple(parts), budget, dropped, tuple(notes), priming, tuple(recall))


def span(numbers: Sequence[int]) -> str:
    """'turns 3–7' for a run of turn numbers."""
    if not numbers:
        return "no turns"
    if len(numbers) == 1:
        return f"turn {numbers[0]}"
    return f"turns {numbers[0]}–{numbers[-1]}"


def history_part(turns: Sequence[HistoryTurn], reason: str) -> Part | None:
    if not turns:
        return None
    return Part("history", tuple(m for t in turns for m in t.messages), reason)


def fixed_tokens(request: ContextRequest) -> int:
    """Tokens every context spends before any memory: system, attached files, input, priming."""
    system = request.system_message
    return (request.counter.priming + request.input.tokens + (system.tokens if system else 0)
            + sum(m.tokens for m in request.attached))


def fit_newest_turns(
    turns: Iterable[HistoryTurn], room: int | None, limit: int | None = None
) -> list[HistoryTurn]:
    """The newest whole turns (oldest first) that fit in `room` tokens, at most `limit`."""
    kept: list[HistoryTurn] = []
    used = 0
    for turn in turns:
        if limit is not None and len(kept) >= limit:
            break
        if room is not None and used + turn.tokens > room:
            break
        kept.append(turn)
        used += turn.tokens
    kept.reverse()
    return drop_leading_assistant(kept)


def drop_leading_assistant(turns: Sequence[HistoryTurn]) -> list[HistoryTurn]:
    """The turns from the first that opens with a user message."""
    # Turn 1 of an imported transcript can open with an assistant greeting:
    # a history must never start on an assistant message.
    start = 0
    while start < len(turns) and turns[start].messages[0].role == "assistant":
        start += 1
    return list(turns[start:])


def newest_turns_part(
    request: ContextRequest, label: str, *, room: int | None = None, limit: int | None = None,
    why_dropped: str = "",
) -> tuple[Part | None, str | None]:
    """The newest whole turns as a history part, and the note on what was dropped.

    The part's reason reads "<label>: turns 4–6; dropped turns 1–3<why_dropped>".
    """
    turns = fit_newest_turns(request.history.newest_first(), room=room, limit=limit)
    dropped = dropped_note(request.history.turn_count(), turns)
    reason = f"{label}: {span([t.number for t in turns])}"
    if dropped:
        reason += f"; {dropped}{why_dropped}"
    return history_part(turns, reason), dropped


def dropped_note(total: int, kept: Sequence[HistoryTurn]) -> str | None:
    if not total:
        return None
    first_kept = kept[0].number if kept else total + 1
    if first_kept <= 1:
        return None
    return f"dropped {span(range(1, first_kept))}"
