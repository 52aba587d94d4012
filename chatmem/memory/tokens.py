"""`tokens`: the newest whole turns that fit a token budget.

Like ConversationTokenBufferMemory / trim_messages(strategy="last"), but the
budget counts the system prompt, the new input and the chat-format overhead,
and turns are read newest first so the cost does not grow with the history.
"""

from __future__ import annotations

from chatmem.memory.base import (
    BaseStrategy,
    Context,
    ContextRequest,
    Param,
    assemble,
    dropped_note,
    fit_newest_turns,
    fixed_tokens,
    history_part,
    span,
)


class TokenBudgetStrategy(BaseStrategy):
    name = "tokens"
    description = "Send the newest whole turns that fit max_tokens (system and input included)."
    PARAMS = (Param("max_tokens", int, 2000, "budget for the whole context", minimum=1),)

    def budget(self, request: ContextRequest) -> int | None:
        return int(self.params["max_tokens"])

    def build(self, request: ContextRequest) -> Context:
        budget = int(self.params["max_tokens"])
        room = max(budget - fixed_tokens(request), 0)
        turns = fit_newest_turns(request.history.newest_first(), room=room)
        dropped = dropped_note(request.history.turn_count(), turns)
        reason = f"tokens max_tokens={budget}: {span([t.number for t in turns])}"
        if dropped:
            reason += f"; {dropped} to fit"
        part = history_part(turns, reason)
        return assemble(request, [part] if part else [], budget=budget, dropped=dropped)
