"""`summary`: a running summary (as a system part) + the new input.

Like ConversationSummaryMemory, but every update is a stored version with
the messages it covers, the drift guard pins literal details the summarizer
dropped, and a failed update leaves the turns raw in the context until a
later update catches up in one batched call (chatmem.memory.summary_memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import takewhile

from chatmem.context_warnings import ContextWarning
from chatmem.memory.assembly import assemble, fit_newest_turns, fixed_tokens, history_part
from chatmem.memory.base import ContextRequest, MemoryEnv
from chatmem.memory.context import Context
from chatmem.memory.history_view import HistoryTurn
from chatmem.memory.params import param
from chatmem.memory.reasons import NotYetSummarized, Unsummarized, turn_run
from chatmem.memory.summary_memory import SummaryMemory, behind_warning, next_batch
from chatmem.memory.summary_state import SummaryState, load_state


@dataclass(frozen=True)
class SummaryParams:
    summary_max_tokens: int = param(256, "longest summary kept; longer ones are clipped",
                                    minimum=16)


class SummaryStrategy(SummaryMemory[SummaryParams]):
    name = "summary"
    description = "Send a running summary of all earlier turns (updated every turn) + the input."
    OPTIONS = SummaryParams

    def build(self, request: ContextRequest) -> Context:
        st = load_state(request.state, self.name)
        budget = self.budget(request)
        parts, notes = self.memory_parts(st, request.counter)
        # Turns not yet folded in (a failed, skipped or not-yet-run update) are sent raw,
        # the newest that fit the budget beside the summary: after a switch on a long
        # history with no summarizer that is not all of them (tens of thousands of tokens
        # against a 4,000 budget). Those left out are stored and wait for the summary.
        room = (None if budget is None
                else max(budget - fixed_tokens(request) - sum(p.tokens for p in parts), 0))
        newest = takewhile(lambda turn: turn.number > st.boundary,
                           request.history.newest_first())
        pending = fit_newest_turns(newest, room)
        first_sent = pending[0].number if pending else request.history.turn_count() + 1
        if first_sent > st.boundary + 1:
            notes.append(NotYetSummarized((st.boundary + 1, first_sent - 1)))
        warnings: list[ContextWarning] = []
        if pending:
            part = history_part(pending, Unsummarized(turn_run([t.number for t in pending]),
                                                      st.behind))
            if part:
                parts.append(part)
        # Said also when the catch-up was skipped (Ctrl-C), not failed: only the turn line
        # tells the user that a stretch of the conversation is in neither part.
        if st.behind or first_sent > st.boundary + 1:
            warnings.append(behind_warning(pending, st.boundary + 1, first_sent - 1))
        return assemble(request, parts, budget=budget, warnings=warnings, dropped=notes)

    def next_fold(self, env: MemoryEnv, st: SummaryState) -> list[HistoryTurn]:
        """Every turn after the boundary, in one bounded batch."""
        last = env.history.turn_count()
        if st.boundary >= last:
            return []
        return next_batch(env.history, st.boundary + 1, last, self.fold_limit())
