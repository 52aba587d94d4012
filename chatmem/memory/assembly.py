"""Putting a context together: the fixed parts, the newest turns that fit, and honest notes
on the budget and on what was dropped. Shared by every strategy's build."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from chatmem.context_warnings import ContextWarning
from chatmem.errors import WrongParts
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import PART_ORDER, Context, Message, Part
from chatmem.memory.guards import over_budget
from chatmem.memory.history_view import HistoryTurn
from chatmem.memory.reasons import (
    AttachedFiles,
    DroppedNote,
    DroppedTurns,
    NewestTurns,
    NewInput,
    PartReason,
    SystemPrompt,
    turn_run,
)
from chatmem.plugin_calls import kind_of


def system_part(request: ContextRequest) -> Part | None:
    message = request.system_message
    return Part("system", (message,), SystemPrompt()) if message else None


def files_part(request: ContextRequest) -> Part | None:
    if not request.attached:
        return None
    return Part("files", request.attached, AttachedFiles(len(request.attached)))


def input_part(request: ContextRequest) -> Part:
    return Part("input", (request.input,), NewInput())


def assemble(
    request: ContextRequest,
    middle: Iterable[Part | None],
    *,
    budget: int | None = None,
    dropped: Iterable[DroppedNote] = (),
    warnings: Iterable[ContextWarning] = (),
    recall: Iterable[dict[str, Any]] = (),
) -> Context:
    """Put the parts in their fixed order and check the budget honestly."""
    if budget is not None and not (type(budget) is int and budget >= 0):
        # A plugin's budget() answering "200" failed deep in the sums as "TypeError: '>'
        # not supported between instances of 'int' and 'str'", its budget() unnamed.
        raise WrongParts(f"a budget of {budget!r}, not a token count of 0 or more or None"
                         " (what its budget() returns)", parts=False)
    given = [p for p in middle if p is not None]
    for part in given:
        _check_part(part)
    parts = [p for p in (system_part(request), *given, files_part(request),
                         input_part(request)) if p is not None]
    parts.sort(key=lambda p: PART_ORDER.index(p.kind))
    notes = list(warnings)
    left_out = tuple(dropped)
    priming = request.counter.priming
    context = Context(tuple(parts), budget, left_out, priming=priming)
    if context.over_budget:
        notes.append(over_budget(context, request))
    return Context(tuple(parts), budget, left_out, tuple(notes), priming, tuple(recall))


def _check_part(part: object) -> None:
    """WrongParts unless `part` is a Part of a known kind holding chatmem Messages: a
    plugin's build passing dicts (as a chat API takes them) failed here, deep in the token
    sums, as "AttributeError: 'dict' object has no attribute 'tokens'". A type check per
    message, every turn: the rest of a context is checked once built (`wrong_context`)."""
    if not isinstance(part, Part):
        raise WrongParts(f"{kind_of(part)}, not a chatmem.memory.context.Part")
    if part.kind not in PART_ORDER:
        raise WrongParts(f"a part of kind {part.kind!r} (kinds: {', '.join(PART_ORDER)})")
    messages = part.messages
    if not isinstance(messages, tuple | list):
        raise WrongParts(f"a {part.kind!r} part whose messages are {kind_of(messages)}, not a"
                         " tuple of chatmem.memory.context.Message values")
    for message in messages:
        if not isinstance(message, Message):
            raise WrongParts(f"a {part.kind!r} part holding {kind_of(message)}, not a"
                             " chatmem.memory.context.Message")


def span(numbers: Sequence[int]) -> str:
    """'turns 3–7' for a run of turn numbers."""
    if not numbers:
        return "no turns"
    if len(numbers) == 1:
        return f"turn {numbers[0]}"
    return f"turns {numbers[0]}–{numbers[-1]}"


def history_part(turns: Sequence[HistoryTurn], reason: PartReason) -> Part | None:
    if not turns:
        return None
    return Part("history", tuple(m for t in turns for m in t.messages), reason)


def fixed_tokens(request: ContextRequest) -> int:
    """Tokens every context spends before any memory: system, attached files, input (and a
    reply it continues), priming."""
    system = request.system_message
    begun = request.reply_begun
    return (request.counter.priming + request.input.tokens + (system.tokens if system else 0)
            + sum(m.tokens for m in request.attached) + (begun.tokens if begun else 0))


def fit_newest_turns(
    turns: Iterable[HistoryTurn], room: int | None, limit: int | None = None
) -> list[HistoryTurn]:
    """The newest whole turns (oldest first) that fit in `room` tokens, at most `limit`.

    Only turn 1 can open with an assistant message (every later turn starts at a user
    message): the greeting a character app or a transcript opens with. It is the start
    of the conversation, not a reply cut from its question, so it is kept like any turn;
    the model gets the history its client sent (OpenAI and chat templates take an
    assistant message after the system one, as the local counter already renders it)."""
    kept: list[HistoryTurn] = []
    used = 0
    if limit is not None and limit <= 0:
        return kept
    for turn in turns:
        if room is not None and used + turn.tokens > room:
            break
        kept.append(turn)
        used += turn.tokens
        # Stopping here, not at the next turn, leaves a lazy history's next page unread.
        if limit is not None and len(kept) >= limit:
            break
    kept.reverse()
    return kept


def drop_leading_assistant(turns: Sequence[HistoryTurn]) -> list[HistoryTurn]:
    """`turns` from the first one a context may open with: a turn opening with a user
    message, or the session's own opening (turn 1, a greeting the assistant said first).

    Every turn after the first starts at a user message, so a strategy's selection opens
    on an assistant message only where it starts at turn 1's greeting, which is kept as
    `fit_newest_turns` keeps it. Plugins written for the earlier rule (the README's
    `anchor` example among them) call this before sending turns they picked."""
    start = 0
    while (start < len(turns) and turns[start].messages
           and turns[start].messages[0].role == "assistant" and turns[start].number != 1):
        start += 1
    return list(turns[start:])


def newest_turns(request: ContextRequest, room: int | None,
                 limit: int | None = None) -> list[HistoryTurn]:
    """`fit_newest_turns` over the request's history, read no further than `limit` asks."""
    return fit_newest_turns(request.history.newest_first(limit), room=room, limit=limit)


def newest_turns_part(
    request: ContextRequest, strategy: str, setting: str, value: int, *,
    room: int | None = None, limit: int | None = None,
) -> tuple[Part | None, list[DroppedNote]]:
    """The newest whole turns as a history part, and the note on what was dropped
    (`room` bounding them means the budget is why)."""
    turns = newest_turns(request, room, limit)
    dropped = dropped_turns(request.history.turn_count(), turns)
    reason = NewestTurns(strategy, setting, value, turn_run([t.number for t in turns]),
                         dropped, to_fit=room is not None)
    return history_part(turns, reason), [DroppedTurns(dropped)] if dropped else []


def dropped_turns(total: int, kept: Sequence[HistoryTurn]) -> tuple[int, int] | None:
    """The turns before the first one kept (None when none are)."""
    if not total:
        return None
    first_kept = kept[0].number if kept else total + 1
    if first_kept <= 1:
        return None
    return (1, first_kept - 1)
