"""A plugin's provider, its unknown exceptions made chatmem's.

chatmem's own providers raise ProviderError (or a subclass) for every failure it knows how
to word; a plugin's may raise anything its client library does (ConnectionError, an HTTP
library's error, ValueError for a missing key). Wrapped, such an exception becomes
ProviderFailed: the turn is recorded as failed, the chat goes on, a command says one line
naming the provider, as for a model error of chatmem's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from chatmem.errors import ChatmemError, ProviderFailed, guarded
from chatmem.providers.base import ChatMessages, Provider, Purpose, ReplyStream, Usage

if TYPE_CHECKING:
    from chatmem.tokens import TokenCounter


class GuardedProvider:
    """`inner`, whose exceptions other than chatmem's are ProviderFailed."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @name.setter
    def name(self, value: str) -> None:
        self.inner.name = value

    @property
    def model(self) -> str:
        return self.inner.model

    @model.setter
    def model(self, value: str) -> None:
        self.inner.model = value

    def _failed(self, error: BaseException) -> ProviderFailed:
        return ProviderFailed(self.inner.name, error)

    def stream(self, messages: ChatMessages) -> ReplyStream:
        stream = guarded(self._failed, lambda: self.inner.stream(messages))
        return GuardedStream(stream, self._failed)

    def complete(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> str:
        return guarded(self._failed, lambda: self.inner.complete(messages, purpose=purpose))

    def token_counter(self) -> TokenCounter:
        return guarded(self._failed, self.inner.token_counter)

    def close(self) -> None:
        guarded(self._failed, self.inner.close)

    def __getattr__(self, attribute: str) -> Any:
        # What else the plugin's provider offers (its `images` rule, say), as it is.
        return getattr(self.inner, attribute)


class GuardedStream:
    """A reply stream whose iteration and close raise only chatmem's errors."""

    def __init__(self, inner: ReplyStream, failed: Callable[[BaseException], ChatmemError]):
        self.inner = inner
        self._failed = failed

    @property
    def usage(self) -> Usage:
        return self.inner.usage

    @usage.setter
    def usage(self, value: Usage) -> None:
        self.inner.usage = value

    @property
    def rendered_prompt(self) -> str | None:
        return getattr(self.inner, "rendered_prompt", None)

    @rendered_prompt.setter
    def rendered_prompt(self, value: str | None) -> None:
        self.inner.rendered_prompt = value

    def __iter__(self) -> Iterator[str]:
        deltas = guarded(self._failed, lambda: iter(self.inner))
        while True:
            try:
                delta = next(deltas)
            except StopIteration:
                return
            except (ChatmemError, KeyboardInterrupt):
                raise
            except Exception as e:  # a plugin's stream may raise anything
                raise self._failed(e) from e
            yield delta

    def close(self) -> None:
        guarded(self._failed, self.inner.close)
