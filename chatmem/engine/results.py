"""What one turn gave its caller: the stored turn row, the context sent, the reply and
what was said of it (chatmem.engine.turns runs the turn)."""

from __future__ import annotations

from dataclasses import dataclass, field

from chatmem.memory.base import Context
from chatmem.notices import CutBy, Notice, ReplyCut
from chatmem.store import TurnRecord


@dataclass
class TurnResult:
    record: TurnRecord
    context: Context
    reply: str
    notices: list[Notice] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.record.status

    @property
    def cut(self) -> CutBy | None:
        """What cut the reply short (the cap, a content filter); None: the model ended it."""
        return next((n.by for n in self.notices if isinstance(n, ReplyCut)), None)

    def billed_tokens(self) -> tuple[int, int]:
        """(prompt, reply) tokens: the provider's counts when it reported them, else the
        prompt as counted."""
        record = self.record
        prompt = record.prompt_tokens if record.prompt_tokens is not None else (
            record.estimated_tokens or 0)
        return prompt, record.completion_tokens or 0
