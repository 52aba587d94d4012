"""`buffer`: every message, like LangChain's ConversationBufferMemory."""

from __future__ import annotations

from chatmem.memory.assembly import assemble, fit_newest_turns, history_part, span
from chatmem.memory.base import BaseStrategy, ContextRequest
from chatmem.memory.context import Context


class BufferStrategy(BaseStrategy):
    name = "buffer"
    description = "Send every message of the session; cost grows with the history."

    def build(self, request: ContextRequest) -> Context:
        turns = fit_newest_turns(request.history.newest_first(), room=None)
        reason = f"buffer: all {span([t.number for t in turns])}" if turns else ""
        return assemble(request, [history_part(turns, reason)], budget=self.budget(request))
