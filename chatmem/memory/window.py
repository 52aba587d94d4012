"""`window`: the last k whole turns, like ConversationBufferWindowMemory."""

from __future__ import annotations

from chatmem.memory.assembly import assemble, newest_turns_part
from chatmem.memory.base import BaseStrategy, ContextRequest, Param
from chatmem.memory.context import Context


class WindowStrategy(BaseStrategy):
    name = "window"
    description = "Send the last k complete turns; older turns are dropped."
    PARAMS = (Param("k", int, 5, "how many recent turns to keep", minimum=0),)

    def build(self, request: ContextRequest) -> Context:
        k = self.params["k"]
        history, dropped = newest_turns_part(request, f"window k={k}", limit=k)
        return assemble(request, [history], budget=self.budget(request), dropped=dropped)
