"""`summary`: a running summary (as a system part) + the new input.

Like ConversationSummaryMemory, but every update is a stored version with
the messages it covers, the drift guard pins literal details the summarizer
dropped, and a failed update leaves the turns raw in the context until a
later update catches up in one batched call (chatmem.memory.summary_memory).
"""

from __future__ import annotations

from dataclasses import dataclass

from chatmem.context_warnings import ContextWarning, SummaryBehind
from chatmem.memory.assembly import assemble, history_part
from chatmem.memory.base import ContextRequest, MemoryEnv
from chatmem.memory.context import Context
from chatmem.memory.history_view import HistoryTurn
from chatmem.memory.params import param
from chatmem.memory.reasons import Unsummarized, turn_run
from chatmem.memory.summary_memory import SummaryMemory, next_batch
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
        # Turns not yet folded in (a failed or not-yet-run update) are sent raw:
        # the summary strategy never loses a turn, it only delays compressing it.
        pending = request.history.turns(st.boundary + 1, request.history.turn_count())
        parts, notes = self.memory_parts(st, request.counter)
        warnings: list[ContextWarning] = []
        if pending:
            part = history_part(pending, Unsummarized(turn_run([t.number for t in pending]),
                                                      st.behind))
            if part:
                parts.append(part)
            if st.behind:
                warnings.append(SummaryBehind(pending[0].number, pending[-1].number))
        return assemble(request, parts, budget=self.budget(request), warnings=warnings,
                        dropped=notes)

    def next_fold(self, env: MemoryEnv, st: SummaryState) -> list[HistoryTurn]:
        """Every turn after the boundary, in one bounded batch."""
        last = env.history.turn_count()
        if st.boundary >= last:
            return []
        return next_batch(env.history, st.boundary + 1, last, self.fold_limit())
