"""A provider whose replies never repeat the user's secrets.

A server may quote the request back, its Authorization header included, in a
successful reply; a model may repeat a key it was shown. The API key and
CHATMEM_KEY are replaced by a label in every piece of the streamed reply and
in whole replies (summaries, facts), before anything prints or stores them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from chatmem.privacy.secrets import SecretMask
from chatmem.providers.base import ChatMessages, Provider, Purpose, ReplyStream, Usage
from chatmem.tokens import TokenCounter


class MaskedReply:
    def __init__(self, inner: ReplyStream, mask: SecretMask) -> None:
        self._inner = inner
        self._mask = mask

    @property
    def usage(self) -> Usage:
        return self._inner.usage

    @usage.setter
    def usage(self, usage: Usage) -> None:
        self._inner.usage = usage

    @property
    def rendered_prompt(self) -> str | None:
        return self._inner.rendered_prompt

    @rendered_prompt.setter
    def rendered_prompt(self, text: str | None) -> None:
        self._inner.rendered_prompt = text

    def __iter__(self) -> Iterator[str]:
        for piece in self._inner:
            if not piece:
                yield piece  # the server answering (ReplyStream): nothing to mask
            elif shown := self._mask.feed(piece):
                yield shown
        if rest := self._mask.flush():
            yield rest

    def close(self) -> None:
        self._inner.close()


class MaskedProvider:
    """`inner` with `secrets` (secret → label) masked in what it answers."""

    def __init__(self, inner: Provider, secrets: Mapping[str, str]) -> None:
        self.inner = inner
        self.secrets = secrets
        self.name = inner.name
        self.model = inner.model

    def wrapped_provider(self) -> Provider:
        return self.inner

    def stream(self, messages: ChatMessages) -> MaskedReply:
        return MaskedReply(self.inner.stream(messages), SecretMask(self.secrets))

    def complete(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> str:
        return SecretMask(self.secrets).mask(self.inner.complete(messages, purpose=purpose))

    def token_counter(self) -> TokenCounter:
        return self.inner.token_counter()

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
