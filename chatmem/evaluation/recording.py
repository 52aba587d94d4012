"""Counting and calling the way a conversation was recorded, so its numbers reproduce.

A session records the provider, model and tokenizer of its latest turn; a
transcript may record them in its header. `inspect`, what-ifs, `replay` and
`eval` use them unless the user names a provider or model on the command line:
the same command on the same input then gives the same numbers on any machine
that has the recorded tokenizer, and says so plainly when it has not.

Models are opened lazily: a replay with recorded replies under a strategy
that keeps no derived state calls no model at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chatmem.images import ImageRule
from chatmem.providers.base import ChatMessages, Provider, Purpose, ReplyStream, image_rule
from chatmem.tokens import TiktokenCounter, TokenCounter, counter_for_model

if TYPE_CHECKING:
    from chatmem.config.settings import Settings

LOCAL_PREFIX = "llama:"
FALLBACK = "cl100k_base"


@dataclass(frozen=True)
class Recording:
    """What a conversation was recorded with; any field may be unknown."""

    provider: str | None = None
    model: str | None = None
    tokenizer: str | None = None


@dataclass(frozen=True)
class Tokenizer:
    """What the numbers of one command were counted with, for every table, JSON and report."""

    name: str
    exact: bool
    recorded: str | None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "exact": self.exact, "recorded": self.recorded,
                "note": self.note}

    def describe(self) -> str:
        """`tokenizer cl100k_base (exact)`, with the note when there is one."""
        text = f"tokenizer {self.name} ({'exact' if self.exact else 'approximate'})"
        return f"{text}; {self.note}" if self.note else text


class LazyProvider:
    """A Provider opened on its first call; the token counter is chosen up front."""

    def __init__(self, open_provider: Callable[[], Provider], name: str, model: str,
                 counter: TokenCounter | None = None) -> None:
        self._open = open_provider
        self._inner: Provider | None = None
        self._counter = counter
        self.name = name
        self.model = model

    @property
    def opened(self) -> bool:
        return self._inner is not None

    def inner(self) -> Provider:
        if self._inner is None:
            self._inner = self._open()
            self.model = self._inner.model
        return self._inner

    def wrapped_provider(self) -> Provider:
        return self.inner()

    @property
    def images(self) -> ImageRule | None:
        """How the model counts an image (providers.base.image_rule): asked only of an
        image (engine.attached), so a replay without one opens no model for it."""
        return image_rule(self.inner())

    def stream(self, messages: ChatMessages) -> ReplyStream:
        return self.inner().stream(messages)

    def complete(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> str:
        return self.inner().complete(messages, purpose=purpose)

    def token_counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = self.inner().token_counter()
        return self._counter

    def fresh(self) -> LazyProvider:
        """The same model again, not yet opened and with no calls behind it: what a model
        keeps between calls (the scripted one's next reply) must not carry from one
        strategy's replay into the next one's."""
        return LazyProvider(self._open, self.name, self.model, self._counter)

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()


def reproducing(settings: Settings, recording: Recording, *, explicit: bool,
                create_provider: Callable[[Settings], Provider]) -> LazyProvider:
    """The provider (lazy) and counter that reproduce `recording`, unless `explicit` flags rule.

    With --provider or --model the user's choice is used as it resolves now,
    counted with its own tokenizer. Otherwise the recorded provider and model
    answer any model call, and counts use the recorded tokenizer; with nothing
    recorded, counts use cl100k_base and say so. `create_provider` opens a provider from
    settings (the registries', chatmem.plugins).
    """
    from chatmem.providers import resolve_provider_name

    if explicit or recording.provider is None:
        chosen = settings
    elif recording.provider == "local":
        # A local model is recorded by its file's name, not its path: the configured
        # file runs, and only a tokenizer of the same name counts as the recorded one.
        chosen = dataclasses.replace(settings, provider="local", model=None)
    else:
        chosen = dataclasses.replace(settings, provider=recording.provider,
                                     model=recording.model or settings.model)
    if explicit:
        name = resolve_provider_name(chosen)
        return LazyProvider(lambda: create_provider(chosen), name, chosen.model or name)
    # With nothing recorded, the configured provider answers: it is what a saved replay
    # records ("auto" made a later replay of it ignore the config and look for a GGUF file).
    name = recording.provider or resolve_provider_name(chosen)
    lazy = LazyProvider(lambda: create_provider(chosen), name,
                        recording.model or chosen.model or name)
    lazy._counter = _recorded_counter(chosen, recording, lazy)
    return lazy


def _recorded_counter(settings: Settings, recording: Recording,
                      lazy: LazyProvider) -> TokenCounter:
    key = recording.tokenizer or _implied_tokenizer(recording)
    if key is not None and key.startswith(LOCAL_PREFIX):
        if _local_model_file(settings) == key[len(LOCAL_PREFIX):]:
            counter = lazy.inner().token_counter()
            if counter.key == key:
                return counter
        return Unavailable(key, f"the recorded tokenizer {key} is not available here")
    if key == FALLBACK:
        return counter_for_model(recording.model, exact=recording.provider == "scripted")
    if key is None:
        return Unavailable(None, "no tokenizer was recorded")
    return Unavailable(key, f"the recorded tokenizer {key} is not available here")


def _implied_tokenizer(recording: Recording) -> str | None:
    """Sessions and transcripts written before tokenizers were recorded."""
    if recording.provider in ("scripted", "openai"):
        return FALLBACK
    return None


def _local_model_file(settings: Settings) -> str | None:
    from chatmem.providers.local import bundled_model_path, xllamacpp_installed

    if not xllamacpp_installed():
        return None
    path = settings.local.model_path or bundled_model_path()
    return Path(path).name if path else None


class Unavailable(TiktokenCounter):
    """cl100k_base standing in for a tokenizer this machine does not have: approximate."""

    def __init__(self, recorded: str | None, why: str) -> None:
        super().__init__(None)
        self.approximate = True
        self.recorded = recorded
        self.note = f"{why}: counts use {FALLBACK} (approximate)"


def describe_counter(counter: TokenCounter, recorded: str | None) -> Tokenizer:
    """The Tokenizer record of a counter in use; `recorded` is what the input recorded."""
    if isinstance(counter, Unavailable):
        return Tokenizer(counter.key, False, counter.recorded, counter.note)
    if counter.approximate:
        return Tokenizer(counter.key, False, recorded,
                         stand_in_note(counter.key, getattr(counter, "model", None)))
    return Tokenizer(counter.key, True, recorded)


def stand_in_note(key: str, model: str | None) -> str:
    """Why counts with `key` are approximate for `model`: the note of a Tokenizer whose
    counter is not the model's own (a model tiktoken does not know)."""
    whose = f"{model}'s" if model else "the model's own"
    return f"{key} stands in for {whose} tokenizer"
