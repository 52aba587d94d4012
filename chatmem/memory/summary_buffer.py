"""`summary-buffer`: a summary of older turns + the recent whole turns, within one budget.

Like ConversationSummaryBufferMemory, with its faults fixed: the summary (and
any pinned drift-guard facts) count inside `max_tokens`; the turns leaving
the window are folded into the summary in ONE call per prune, not one call
per message; and the prune boundary is stored, so nothing is summarized twice
and a restarted process resumes exactly where the last one stopped. Pins get
at most a quarter of the budget (the oldest are released beyond it), and the
newest whole turn outranks them, so pins never crowd out the recent turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, takewhile

from chatmem.memory.assembly import (
    assemble,
    fit_newest_turns,
    fixed_tokens,
    history_part,
)
from chatmem.memory.base import ContextRequest, MemoryEnv
from chatmem.memory.context import Context
from chatmem.memory.history_view import HistoryTurn
from chatmem.memory.params import param
from chatmem.memory.pin_block import PinCost, fit_pins
from chatmem.memory.reasons import NewestTurns, NotYetSummarized, Summarized, turn_run
from chatmem.memory.summary_memory import (
    FOLD_TOKENS,
    SummaryMemory,
    behind_warning,
    next_batch,
)
from chatmem.memory.summary_state import SummaryState, load_state
from chatmem.tokens import TokenCounter


@dataclass(frozen=True)
class SummaryBufferParams:
    max_tokens: int = param(2000, "budget for the whole context, summary included", minimum=1)
    summary_max_tokens: int = param(
        256, "longest summary kept (at most a third of max_tokens); longer ones are clipped",
        minimum=16)
    prune_to: float = param(
        0.5, "a prune folds turns until the rest fill at most this share of their room, "
        "so prunes (summarizer calls) come in batches, not every turn",
        minimum=0.0, maximum=1.0)


class SummaryBufferStrategy(SummaryMemory[SummaryBufferParams]):
    name = "summary-buffer"
    description = (
        "Send a summary of older turns + the newest whole turns, all within max_tokens."
    )
    OPTIONS = SummaryBufferParams
    in_default_eval = True

    def summary_limit(self) -> int:
        # A summary may take at most a third of the budget, so recent turns always have room.
        return max(16, min(self.options.summary_max_tokens, self.options.max_tokens // 3))

    def budget(self, request: ContextRequest) -> int | None:
        return self.options.max_tokens

    def build(self, request: ContextRequest) -> Context:
        budget = self.options.max_tokens
        st = load_state(request.state, self.name)
        last = request.history.turn_count()
        behind = bool(st.behind)
        # Lazily, newest first: only as many turns are read as the budget can take. Behind
        # (a failed or skipped catch-up), the turns the summary has not folded are all
        # candidates; those that do not fit wait for it, stored, never sent over the budget.
        unsummarized = _newest_after(request.history.newest_first(), st.boundary)
        first = next(unsummarized, None)
        newest = [first] if first else []
        fixed = fixed_tokens(request)
        # The newest whole turn outranks pinned details: pins never take its room.
        parts, notes = self.memory_parts(st, request.counter, room=max(budget - fixed, 0),
                                         keep_free=newest[0].tokens if newest else 0)
        room = max(budget - fixed - sum(p.tokens for p in parts), 0)
        turns = fit_newest_turns(chain([first] if first else [], unsummarized), room)
        first_kept = turns[0].number if turns else last + 1
        if st.boundary:
            notes.append(Summarized((1, st.boundary)))
        if first_kept > st.boundary + 1:
            notes.append(NotYetSummarized((st.boundary + 1, first_kept - 1)))
        part = history_part(turns, NewestTurns(self.name, "max_tokens", budget,
                                               turn_run([t.number for t in turns]),
                                               behind=st.behind))
        if part:
            parts.append(part)
        warnings = [behind_warning(turns, st.boundary + 1, first_kept - 1)] if behind else []
        return assemble(request, parts, budget=budget, dropped=notes,
                        warnings=warnings)

    def next_fold(self, env: MemoryEnv, st: SummaryState) -> list[HistoryTurn]:
        """The turns the next prune folds, oldest first; none while the turns fit.

        Only the newest turns that could still fit are read: every turn before
        them overflows whatever they hold. A prune folds down to a low-water
        mark (pruning only what just overflowed would call the summarizer on
        nearly every turn once the window is full), at most fold_limit() tokens.
        """
        last = env.history.turn_count()
        if last <= st.boundary:
            return []
        base = self.turn_room(env, st)
        recent: list[HistoryTurn] = []
        used = 0
        for turn in env.history.newest_first():
            if turn.number <= st.boundary:
                break
            recent.append(turn)
            used += turn.tokens
            if used > base:
                break
        recent.reverse()
        # The next input is assumed no longer than the longest user message still in the window.
        room = base - max((m.tokens for t in recent for m in t.messages if m.role == "user"),
                          default=0)
        if recent[0].number == st.boundary + 1 and not _overflow(recent, room):
            return []
        kept = fit_newest_turns(reversed(recent), int(room * self.options.prune_to))
        first_kept = kept[0].number if kept else last + 1
        if first_kept > last and recent[-1].tokens <= room:
            first_kept = last  # the newest turn stays raw whenever it fits at all
        if first_kept <= st.boundary + 1:
            return []
        return next_batch(env.history, st.boundary + 1, first_kept - 1, self.fold_limit())

    def fold_limit(self) -> int:
        # A prune folds at most about the budget's worth of turns: one call, never split.
        return max(FOLD_TOKENS, 2 * self.options.max_tokens)

    def pin_limit(self) -> int:
        # Pins get at most a quarter of the budget, so however many details the
        # summaries drop, the summary (a third at most) and recent turns keep theirs.
        return max(16, self.options.max_tokens // 4)

    def turn_room(self, env: MemoryEnv, st: SummaryState) -> int:
        """Tokens left for raw turns once system, a full summary and pins fit (not the input).

        The summary is reserved at its clipped maximum, so the summary a prune
        produces can never push the kept turns out, and the pins as they are
        sent, which is never more than `pin_limit()`: however many details
        the summaries drop, this room stays bounded and prunes stay batched.
        """
        counter: TokenCounter = env.counter
        system_tokens = counter.count_message("system", env.system) if env.system else 0
        cost = PinCost(counter)
        shown, _ = fit_pins(st.pins, self.pin_limit(), cost)
        facts = cost(shown) if shown else 0
        return (self.options.max_tokens - counter.priming - system_tokens
                - self.summary_cost(counter) - facts)


def _newest_after(turns: Iterable[HistoryTurn], boundary: int) -> Iterator[HistoryTurn]:
    return takewhile(lambda turn: turn.number > boundary, turns)


def _overflow(turns: list[HistoryTurn], room: int) -> list[HistoryTurn]:
    """The oldest of `turns` that do not fit in `room` beside the newest whole turns."""
    kept = fit_newest_turns(reversed(turns), room)
    first_kept = kept[0].number if kept else turns[-1].number + 1
    return [t for t in turns if t.number < first_kept]
