"""`window`: the last k whole turns, like ConversationBufferWindowMemory."""

from __future__ import annotations

from dataclasses import dataclass

from chatmem.memory.assembly import assemble, newest_turns_part
from chatmem.memory.base import BaseStrategy, ContextRequest
from chatmem.memory.context import Context
from chatmem.memory.params import param


@dataclass(frozen=True)
class WindowParams:
    k: int = param(5, "how many recent turns to keep", minimum=0)


class WindowStrategy(BaseStrategy[WindowParams]):
    name = "window"
    description = "Send the last k complete turns; older turns are dropped."
    OPTIONS = WindowParams
    in_default_eval = True

    def build(self, request: ContextRequest) -> Context:
        k = self.options.k
        history, dropped = newest_turns_part(request, self.name, "k", k, limit=k)
        return assemble(request, [history], budget=self.budget(request), dropped=dropped)
