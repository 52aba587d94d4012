"""The counting proxy replay and what-ifs put before a model: the calls a strategy makes
(summaries, facts) are counted by purpose, so they are measured, not guessed."""

from __future__ import annotations

from chatmem.images import ImageRule
from chatmem.providers.base import ChatMessages, Provider, Purpose, ReplyStream, image_rule
from chatmem.tokens import TokenCounter


class CountingProvider:
    """A Provider that counts the calls made through it, by purpose."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.calls: dict[Purpose, int] = {}

    def wrapped_provider(self) -> Provider:
        return self.inner

    @property
    def images(self) -> ImageRule | None:
        """How the model counts an image (providers.base.image_rule): the inner one's."""
        return image_rule(self.inner)

    def _count(self, purpose: Purpose) -> None:
        self.calls[purpose] = self.calls.get(purpose, 0) + 1

    def stream(self, messages: ChatMessages) -> ReplyStream:
        self._count(Purpose.CHAT)
        return self.inner.stream(messages)

    def complete(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> str:
        self._count(purpose)
        return self.inner.complete(messages, purpose=purpose)

    def token_counter(self) -> TokenCounter:
        return self.inner.token_counter()

    def close(self) -> None:
        pass  # the inner provider is shared and closed by its owner
