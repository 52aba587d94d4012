"""The config file's tables ([local], [scripted], [summary], [embeddings]) as typed values.

Each table's keys, types and defaults are declared once, here: the schema checks a
file's keys against these fields, `Settings` holds one instance per table, and readers
use attributes (`settings.local.threads`), never `.get(key, default)`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LocalSection:
    """[local]: the embedded llama.cpp model."""

    model_path: str | None = None
    """A GGUF file; unset: the bundled model."""
    threads: int = 2
    n_ctx: int = 4096


@dataclass(frozen=True)
class ScriptedSection:
    """[scripted]: the offline provider's script and log."""

    script: str | None = None
    log: str | None = None


@dataclass(frozen=True)
class SummarySection:
    """[summary]: how summaries are written."""

    prompt: str | None = None
    """The summarizer's prompt; unset: chatmem.memory.summarizer.DEFAULT_PROMPT."""
    drift_guard: bool = True
    """Pin details a new summary dropped, so they are still sent."""


@dataclass(frozen=True, repr=False)
class EmbeddingsSection:
    """[embeddings]: which embedder `retrieval` uses."""

    provider: str = "auto"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    """Where the embedder's key is; unset: the chat's api_key_env."""
    threads: int = 1

    def __repr__(self) -> str:
        """The fields, base_url masked (it may carry a key)."""
        return shown_repr(self)


Section = LocalSection | ScriptedSection | SummarySection | EmbeddingsSection
SECTIONS: dict[str, type[Any]] = {
    "local": LocalSection,
    "scripted": ScriptedSection,
    "summary": SummarySection,
    "embeddings": EmbeddingsSection,
}
"""Table name → its dataclass, in the order the schema lists them."""


def shown_repr(value: Any) -> str:
    """A dataclass's repr as the generated one writes it, with each URL that may carry a key
    or a password masked: a base URL's password and query values (any may be a key), a
    history location's password. A settings object logged, or printed among a traceback's
    locals, shows no secret."""
    from chatmem.config.location import masked
    from chatmem.privacy.secrets import redacted_url

    parts = []
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if isinstance(item, str) and f.name == "base_url":
            item = redacted_url(item)
        elif isinstance(item, str) and f.name == "db":
            item = masked(item)
        if f.repr:
            parts.append(f"{f.name}={item!r}")
    return f"{type(value).__qualname__}({', '.join(parts)})"


def section_keys(section: type[Any]) -> dict[str, type | tuple[type, ...]]:
    """Key → the type a file's value must have (`str | None` takes a str)."""
    hints = typing.get_type_hints(section)
    keys: dict[str, type | tuple[type, ...]] = {}
    for f in dataclasses.fields(section):
        hint = hints[f.name]
        if isinstance(hint, types.UnionType):
            hint = next(arm for arm in typing.get_args(hint) if arm is not type(None))
        keys[f.name] = hint
    return keys


def section_table(section: Section) -> dict[str, Any]:
    """The table as `config show` prints it: the keys that have a value."""
    return {k: v for k, v in dataclasses.asdict(section).items() if v is not None}
