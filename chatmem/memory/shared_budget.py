"""Fitting a combination's merged parts into its one shared budget, and saying what was sent.

Whole turns are kept by priority: the newest history turn, then recalled turns, most
relevant first (the newer among equals), then older history turns, newest first. A turn
that does not fit in the room left is skipped and the next is tried, so room is never left
unused while a turn left out would fit; but history stays the newest turns, whole (it ends
at the first that does not fit), and the recalled part never opens on a reply. A recalled
turn answers the question in hand; an old recent turn may not. A message recall chose that
history holds keeps its recall rank: cut with its history turn, it is recalled after all.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from chatmem.memory.assembly import fixed_tokens
from chatmem.memory.base import ContextRequest
from chatmem.memory.context import PART_ORDER, Message, Part, PartKind, SaidDays
from chatmem.memory.reasons import (
    AllTurns,
    Merged,
    NewestTurns,
    PartReason,
    Recalled,
    RecallRoute,
    SharedBudgetCut,
    Unsummarized,
    turn_run,
)
from chatmem.memory.recall_days import redated, with_day

_MEMORY = ("history", "recalled")


def fit_budget(
    request: ContextRequest, parts: list[Part], budget: int | None, also: Part | None = None,
    said: SaidDays | None = None,
) -> tuple[list[Part], list[int], list[tuple[int, float]]]:
    """The parts with whole history and recalled turns kept by priority within `budget`.

    `also`: recalled messages the history part holds (merged there, so sent once). They
    keep their recall priority: a history turn holding one that is cut sends it as
    recalled after all, if it fits in the room its place in the ranking leaves.
    `said`: when the recalled messages were said. Their members named the days before
    merging and this cut, so the lines are worked out again on what is sent (a run's
    first message cut, the next one names the day), within the budget; none stays on
    history, whose messages a line above would read as covering.
    Returns the parts, the history turns left out and the recalled (turn, score)s left out.
    """
    dated = _Dated(request, said)
    parts = dated.history(parts)
    if budget is None:
        return dated.recalled(parts), [], []
    room = _room(request, parts, budget)
    history = next((p for p in parts if p.kind == "history"), None)
    recalled = next((p for p in parts if p.kind == "recalled"), None)
    if recalled is not None and said is not None:
        whole = dated.recalled(parts)
        if sum(p.tokens for p in whole if p.kind in _MEMORY) <= room and (
                recalled.messages[0].role == "user"):
            return whole, [], []
    elif sum(p.tokens for p in parts if p.kind in _MEMORY) <= room and (
            recalled is None or recalled.messages[0].role == "user"):
        return parts, [], []
    held = tuple(also.messages) if also is not None and history is not None else ()
    candidates = sorted((*(recalled.messages if recalled else ()), *held),
                        key=lambda m: (m.turn or 0, m.id or 0))
    # One pass over the messages: a whole history (buffer's) may be thousands of turns.
    history_sizes = _turn_sizes(history.messages if history else ())
    recall_sizes = _turn_sizes(candidates)
    credit = _turn_sizes(held)
    score = {**(dict(also.scores) if held and also else {}),
             **(dict(recalled.scores) if recalled else {})}
    ranked = sorted(recall_sizes, key=lambda n: (score.get(n, float("-inf")), n), reverse=True)
    held_keys = {message_key(m) for m in held}

    def sent_as_recalled(kept_history: set[int], kept_recalled: set[int]) -> list[Message]:
        return [m for m in candidates if (m.turn or 0) in kept_recalled
                and not ((m.turn or 0) in kept_history and message_key(m) in held_keys)]

    # Recall keeps single messages: a turn whose question was not recalled opens on its
    # reply, and a context never does; such a turn is passed over while it would open the part.
    passed: set[int] = set()
    while True:
        kept_history, kept_recalled, left = _fill(history_sizes, ranked, recall_sizes, credit,
                                                  passed, room)
        sent = sent_as_recalled(kept_history, kept_recalled)
        if not sent or sent[0].role == "user":
            break
        passed.add(sent[0].turn or 0)
    for n in ranked:  # what was passed over may fit behind a kept question after all
        first = min((m.turn or 0 for m in sent), default=None)
        if n in passed and recall_sizes[n] <= left and first is not None and first < n:
            kept_recalled.add(n)
            left -= recall_sizes[n]
            sent = sent_as_recalled(kept_history, kept_recalled)
    if said is not None:
        recall_room = room - sum(history_sizes[n] for n in kept_history)
        kept_recalled, sent = dated.fit(lambda turns: sent_as_recalled(kept_history, turns),
                                        kept_recalled, ranked, score, recall_room)
    fitted = [_only(p, kept_history) if p.kind == "history" else p
              for p in parts if p.kind != "recalled"]
    fitted.append(_recalled_part(recalled, also if held else None, sent))
    fitted_parts = sorted((p for p in fitted if p is not None),
                          key=lambda p: PART_ORDER.index(p.kind))
    own = _turn_sizes(recalled.messages if recalled else ())
    return (fitted_parts, sorted(set(history_sizes) - kept_history),
            sorted((n, score.get(n, 0.0)) for n in recall_sizes if n not in kept_recalled
                   and (n not in kept_history or n in own)))


class _Dated:
    """The lines naming the days recalled messages were said, worked out on what is sent."""

    def __init__(self, request: ContextRequest, said: SaidDays | None) -> None:
        self.request, self.said = request, said

    def cost(self, m: Message) -> int:
        """`m`'s tokens as sent, counted once per process as recall counts them."""
        if m.id is None:
            return self.request.counter.count_message(m.role, m.sent)
        counts = self.request.state.message_counts(self.request.counter)
        return counts.sent_tokens(m.id, m.role, m.sent)

    def messages(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        if self.said is None:
            return tuple(messages)
        return redated(messages, self.said, self.cost)

    def history(self, parts: list[Part]) -> list[Part]:
        """`parts` with no line on a history message (merged there from a member's recall)."""
        return [p if p.kind != "history" or all(m.said_on is None for m in p.messages)
                else dataclasses.replace(p, messages=tuple(
                    m if m.said_on is None else with_day(m, None, self.cost)
                    for m in p.messages))
                for p in parts]

    def recalled(self, parts: list[Part]) -> list[Part]:
        return [dataclasses.replace(p, messages=self.messages(p.messages))
                if p.kind == "recalled" and self.said is not None else p for p in parts]

    def fit(self, sent_for: Callable[[set[int]], list[Message]], kept: set[int],
            ranked: Sequence[int], score: Mapping[int, float], room: int,
            ) -> tuple[set[int], list[Message]]:
        """The recalled turns `kept` and the messages sent for them, with their lines, in
        `room`: a line moved to a message counted without one may not fit, and the least
        relevant turn (not the first while another can go) makes room; then room a line
        left, or a turn left, is given to the best turn left out that fits."""
        def tokens(messages: Sequence[Message]) -> int:
            return sum(m.tokens for m in messages)

        sent = list(self.messages(sent_for(kept)))
        while sent and tokens(sent) > room:
            turns = sorted({m.turn or 0 for m in sent})
            least = min(turns[1:] or turns, key=lambda n: (score.get(n, float("-inf")), n))
            kept = kept - {least}
            sent = list(self.messages(sent_for(kept)))
        for n in ranked:  # best first
            if n in kept:
                continue
            trial = list(self.messages(sent_for(kept | {n})))
            if (len(trial) > len(sent) and trial[0].role == "user"
                    and tokens(trial) <= room):
                kept, sent = kept | {n}, trial
        return kept, sent


def _room(request: ContextRequest, parts: Sequence[Part], budget: int) -> int:
    """What `budget` leaves history and recall after the parts every context sends."""
    return budget - fixed_tokens(request) - sum(p.tokens for p in parts if p.kind not in _MEMORY)


def _turn_sizes(messages: Iterable[Message]) -> dict[int, int]:
    """Tokens per turn, in the order the turns first appear."""
    sizes: dict[int, int] = {}
    for m in messages:
        sizes[m.turn or 0] = sizes.get(m.turn or 0, 0) + m.tokens
    return sizes


def _fill(history: Mapping[int, int], ranked: Sequence[int], recall: Mapping[int, int],
          credit: Mapping[int, int], passed: set[int], room: int,
          ) -> tuple[set[int], set[int], int]:
    """The history and recalled turns kept, by priority, and the room left. `credit`: the
    tokens of a turn's recalled messages history holds, paid once when both keep it."""
    turns = sorted(history)
    kept_history: set[int] = set()
    left = room
    if turns and history[turns[-1]] <= left:
        kept_history.add(turns[-1])
        left -= history[turns[-1]]
    kept_recalled: set[int] = set()
    for n in ranked:
        cost = recall[n] - (credit.get(n, 0) if n in kept_history else 0)
        if n not in passed and cost <= left:
            kept_recalled.add(n)
            left -= cost
    if kept_history:  # history is the newest turns, whole: it ends at the first that does not fit
        for n in reversed(turns[:-1]):
            cost = history[n] - (credit.get(n, 0) if n in kept_recalled else 0)
            if cost > left:
                break
            kept_history.add(n)
            left -= cost
    return kept_history, kept_recalled, left


def _recalled_part(recalled: Part | None, also: Part | None,
                   sent: Sequence[Message]) -> Part | None:
    """The recalled part sending `sent`: the merged one's, with `also`'s messages that
    history no longer holds (a part of their own when recall's all went to history)."""
    if not sent:
        return None
    turns = {m.turn or 0 for m in sent}
    base = recalled if recalled is not None else also
    assert base is not None
    if also is None:
        return dataclasses.replace(base, messages=tuple(sent),
                                   scores=tuple((n, s) for n, s in base.scores if n in turns))
    own = tuple(recalled.scores) if recalled is not None else ()
    mine = {n for n, _ in own}
    scores = (*own, *((n, s) for n, s in also.scores if n not in mine))
    return dataclasses.replace(base, messages=tuple(sent),
                               scores=tuple((n, s) for n, s in scores if n in turns))


def _only(part: Part, turns: set[int]) -> Part | None:
    messages = tuple(m for m in part.messages if (m.turn or 0) in turns)
    if len(messages) == len(part.messages):
        return part
    if not messages:
        return None
    return dataclasses.replace(part, messages=messages,
                               scores=tuple((n, s) for n, s in part.scores if n in turns))


# -- what each member's reason says once the fit has cut ---------------------------------


def sent_reason(kind: PartKind, reason: PartReason, chosen: Sequence[Message],
                offered: set[tuple[Any, ...]], sent: Sequence[Part],
                rows: Sequence[Mapping[str, Any]], budget: int | None) -> PartReason | None:
    """`reason`, a member's for the `chosen` messages of its `kind` part, told of what was
    sent of them: `offered`, the keys of the merged part (a message another part holds is
    sent there), `sent` the parts once fit into the shared `budget`, `rows` the member's
    recall rows. None when none of them is sent in this part."""
    by_kind = {p.kind: p for p in sent}
    part = by_kind.get(kind)
    keys = {message_key(m) for m in part.messages} if part else set()
    if kind == "recalled":
        kept = [m for m in chosen if message_key(m) in keys]
        if not kept:
            return None
        if not isinstance(reason, Recalled):
            return reason
        # The lines as sent (with_days worked them out again), on the messages it chose.
        picked = {message_key(m) for m in chosen}
        assert part is not None
        dated = sum(1 for m in part.messages
                    if m.said_on is not None and message_key(m) in picked)
        if len(kept) == len(chosen):
            return dataclasses.replace(reason, dated=dated)
        cut = sum(1 for m in chosen if message_key(m) in offered) - len(kept)
        return dataclasses.replace(_recalled(reason, kept, cut, rows), dated=dated)
    if not isinstance(reason, NewestTurns | AllTurns | Unsummarized):
        return reason
    sent_turns = {m.turn or 0 for m in part.messages} if part else set()
    mine = sorted({m.turn or 0 for m in chosen})
    gone = [n for n in mine if n not in sent_turns]
    changes: dict[str, Any] = {}
    if gone and budget is not None:
        changes = {"turns": turn_run([n for n in mine if n in sent_turns]),
                   "cut": SharedBudgetCut(turn_run(gone), (), budget)}
    if isinstance(reason, NewestTurns) and reason.dropped and reason.recalled:
        # "dropped turns 1–9 except N recalled messages": those the recalled part still sends
        first, last = reason.dropped
        recalled = by_kind.get("recalled")
        changes["recalled"] = sum(1 for m in (recalled.messages if recalled else ())
                                  if first <= (m.turn or 0) <= last)
    return dataclasses.replace(reason, **changes) if changes else reason


def message_key(message: Message) -> tuple[Any, ...]:
    """What makes a message the same one in two members' parts."""
    return ("id", message.id) if message.id is not None else (message.role, message.content)


def _recalled(reason: Recalled, kept: Sequence[Message], cut: int,
              rows: Sequence[Mapping[str, Any]]) -> Recalled:
    """`reason` counting only the `kept` messages, `cut` more left out; scores and routes
    from the member's recall `rows` where they cover them."""
    ids = {m.id for m in kept}
    found = [r for r in rows if r.get("kept") and r.get("id") in ids]
    fused = [float(r["fused"]) for r in found] or [reason.low, reason.high]
    changes: dict[str, Any] = {}
    if len(found) == len(kept):
        routes = Counter(r.get("route") for r in found)
        changes = {"by_words": routes[RecallRoute.WORDS.value],
                   "by_meaning": routes[RecallRoute.MEANING.value],
                   "by_neighbour": routes[RecallRoute.NEIGHBOUR.value],
                   "by_time": routes[RecallRoute.TIME.value],
                   "by_sitting": routes[RecallRoute.SITTING.value],
                   "by_later": routes[RecallRoute.LATER.value]}
    return dataclasses.replace(
        reason, sent=len(kept), turns=len({m.turn for m in kept}), low=min(fused),
        high=max(fused), left=reason.left + max(cut, 0), **changes)


def joined(first: PartReason, *more: PartReason) -> PartReason:
    """One reason for a merged part: a member's own, or Merged when several differ."""
    distinct = tuple(dict.fromkeys((first, *more)))
    return distinct[0] if len(distinct) == 1 else Merged(distinct)
