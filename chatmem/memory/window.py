"""`window`: the last k whole turns, like ConversationBufferWindowMemory."""

from __future__ import annotations

from chatmem.memory.base import (
    BaseStrategy,
    Context,
    ContextRequest,
    Param,
    assemble,
    dropped_note,
    fit_newest_turns,
    history_part,
    span,
)


class WindowStrategy(BaseStrategy):
    name = "window"
    description = "Send the last k complete turns; older turns are dropped."
    PARAMS = (Param("k", int, 5, "how many recent turns to keep", minimum=0),)

    def build(self, request: ContextRequest) -> Context:
        k = self.params["k"]
        turns = fit_newest_turns(request.history.newest_first(), room=None, limit=k)
        dropped = dropped_note(request.history.turn_count(), turns)
        reason = f"window k={k}: {span([t.number for t in turns])}"
        if dropped:
            reason += f"; {dropped}"
        part = history_part(turns, reason)
        return assemble(request, [part] if part else [], budget=self.budget(request),
                        dropped=dropped)
