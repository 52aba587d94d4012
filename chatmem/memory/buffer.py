"""`buffer`: every message, like LangChain's ConversationBufferMemory."""

from __future__ import annotations

from chatmem.memory.assembly import assemble, fit_newest_turns, history_part
from chatmem.memory.base import BaseStrategy, ContextRequest
from chatmem.memory.context import Context
from chatmem.memory.reasons import AllTurns


class BufferStrategy(BaseStrategy):
    name = "buffer"
    description = "Send every message of the session; cost grows with the history."
    in_default_eval = True

    def build(self, request: ContextRequest) -> Context:
        turns = fit_newest_turns(request.history.newest_first(), room=None)
        part = history_part(turns, AllTurns(self.name, (turns[0].number, turns[-1].number))
                            ) if turns else None
        return assemble(request, [part], budget=self.budget(request))
