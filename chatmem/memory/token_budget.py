"""`tokens`: the newest whole turns that fit a token budget.

Like ConversationTokenBufferMemory / trim_messages(strategy="last"), but the
budget counts the system prompt, the new input and the chat-format overhead,
and turns are read newest first so the cost does not grow with the history.
"""

from __future__ import annotations

from dataclasses import dataclass

from chatmem.memory.assembly import assemble, fixed_tokens, newest_turns_part
from chatmem.memory.base import BaseStrategy, ContextRequest
from chatmem.memory.context import Context
from chatmem.memory.params import param


@dataclass(frozen=True)
class TokenBudgetParams:
    max_tokens: int = param(2000, "budget for the whole context", minimum=1)


class TokenBudgetStrategy(BaseStrategy[TokenBudgetParams]):
    name = "tokens"
    description = "Send the newest whole turns that fit max_tokens (system and input included)."
    OPTIONS = TokenBudgetParams
    in_default_eval = True

    def budget(self, request: ContextRequest) -> int | None:
        return self.options.max_tokens

    def build(self, request: ContextRequest) -> Context:
        budget = self.options.max_tokens
        history, dropped = newest_turns_part(
            request, self.name, "max_tokens", budget, room=max(budget - fixed_tokens(request), 0))
        return assemble(request, [history], budget=budget, dropped=dropped)
