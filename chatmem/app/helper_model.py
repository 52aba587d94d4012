"""Which model a strategy's own calls (summaries, fact extraction) go to: the helper the
settings name (helper_provider, helper_model), or none where the chat model does them.

A decision over the settings alone; the workspace opens the model it names
(Workspace.helper_for), as it opens the chat's.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from chatmem.errors import ConfigError

if TYPE_CHECKING:
    from chatmem.config.settings import Settings, Source
    from chatmem.plugins import Registries
    from chatmem.providers.base import Provider


def helper_settings(settings: Settings, chat: Provider, registries: Registries
                    ) -> Settings | None:
    """The settings the helper model opens with; None when it would be `chat` itself."""
    name = settings.helper_provider or chat.name
    # Named where helper_provider was set, not where the chat's provider was.
    check_helper_provider(settings, registries)
    if settings.helper_model is None and name == chat.name:
        return None
    if name == chat.name and settings.helper_model in (chat.model,
                                                       getattr(chat, "model_path", None)):
        return None
    sources = settings.sources
    if settings.helper_model is not None:
        # A message about the model names where helper_model was set, not the chat
        # model's source (a config's helper_model was said to be the default).
        sources = {**sources, "model": helper_source(settings)}
    # Per-call options (-o, a served request's) shape the chat's replies, not these.
    return dataclasses.replace(settings, provider=name,
                               model=settings.helper_model or settings.model,
                               options={}, sources=sources)


def check_helper_provider(settings: Settings, registries: Registries) -> None:
    """ConfigError, naming the setting, when `helper_provider` names a provider none
    installed provides (let be as the settings loaded: check_provider_name)."""
    name, names = settings.helper_provider, registries.provider_names()
    if name is not None and name not in names:
        said = f"unknown provider {name!r} (valid: {', '.join(names)})"
        raise ConfigError(settings.unprovided("helper_provider", said))


def helper_source(settings: Settings) -> Source:
    """Where helper_model came from, a file's named with its key (`FILE: helper_model`), as
    the chat model's `model` key would otherwise be read."""
    from chatmem.config.settings import Source, SourceKind

    source = settings.source_of("helper_model")
    if source.kind is SourceKind.FILE:
        return Source(SourceKind.FILE, f"{source.name}: helper_model")
    return source
