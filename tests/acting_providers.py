"""A scripted model that does something else while it works: another process's purge,
deletion or long write, run at the moment a test needs it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from chatmem.providers.base import ChatMessages, Purpose
from chatmem.providers.scripted import ScriptedProvider, ScriptedReply


class ActsWhile(ScriptedProvider):
    """Runs `action` once: after a reply's stream is made (`hook` "stream": it runs while
    the reply comes, before the turn is stored), or before a helper call answers (`hook`
    "complete": while the summarizer or the extractor works; `purpose`: only a call for
    that). `arm` gives it an action later (after the turns a test needs first)."""

    def __init__(self, hook: Literal["stream", "complete"],
                 action: Callable[[], None] | None = None, *,
                 purpose: Purpose | None = None) -> None:
        super().__init__()
        self.hook = hook
        self.armed = action
        self.purpose = purpose

    def arm(self, action: Callable[[], None], purpose: Purpose | None = None) -> None:
        self.armed, self.purpose = action, purpose

    def _act(self, hook: str, purpose: Purpose) -> None:
        if self.armed is not None and hook == self.hook and self.purpose in (None, purpose):
            action, self.armed = self.armed, None
            action()

    def stream(self, messages: ChatMessages) -> ScriptedReply:
        reply = super().stream(messages)
        self._act("stream", Purpose.CHAT)
        return reply

    def complete(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> str:
        self._act("complete", purpose)
        return super().complete(messages, purpose=purpose)


def chatml(messages: Sequence[dict[str, str]]) -> str:
    """A ChatML template, as SmolLM2's: markup around each message, a reply opened last."""
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
                   for m in messages) + "<|im_start|>assistant\n"


class RenderingProvider(ScriptedProvider):
    """The scripted model, rendering its prompt as a local model's chat template does."""

    def stream(self, messages: Any) -> ScriptedReply:
        reply = super().stream(messages)
        reply.rendered_prompt = chatml(messages)
        return reply
