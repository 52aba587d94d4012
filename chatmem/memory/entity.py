"""`entity`: the user's facts plus the last k turns, like ConversationEntityMemory.

Unlike LangChain's entity memory, facts come from one structured JSON call
per turn (never from splitting model prose on commas), carry the turn they
came from, and are sent as a delimited data block that cannot pose as
instructions or touch the system prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

from chatmem.memory.assembly import assemble, newest_turns_part
from chatmem.memory.base import BaseStrategy, ContextRequest, MemoryEnv
from chatmem.memory.context import Context
from chatmem.memory.extraction import update_facts
from chatmem.memory.facts import fact_origins, fact_speakers, facts_part
from chatmem.memory.params import param
from chatmem.notices import Notice


@dataclass(frozen=True)
class EntityParams:
    k: int = param(3, "how many recent turns to keep", minimum=0)
    max_facts: int = param(20, "facts sent at most; beyond it, the most relevant", minimum=1)


class EntityStrategy(BaseStrategy[EntityParams]):
    name = "entity"
    description = "Send the facts the user stated (key → value, with their turn) + last k turns."
    keeps_state = True
    OPTIONS = EntityParams
    calls_helper = True
    sends_facts = True
    in_default_eval = True

    def build(self, request: ContextRequest) -> Context:
        k = self.options.k
        known = request.state.live_facts()
        facts = facts_part(known, request.input.content, self.options.max_facts,
                           request.counter, (self.name, "k", k), fact_origins(request.state, known),
                           fact_speakers(request.state, known))
        history, dropped = newest_turns_part(request, self.name, "k", k, limit=k)
        return assemble(request, [facts, history], budget=self.budget(request), dropped=dropped)

    def update(self, env: MemoryEnv) -> list[Notice]:
        return update_facts(env)
