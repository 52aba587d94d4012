"""What a plugin registers and where it came from: the `Plugins` its `register(plugins)`
adds to, the entries a registry keeps (ProviderEntry, EmbedderEntry), the checks each name
passes, and the problems that skip a plugin (chatmem.plugins loads them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.embeddings.base import Embedder
    from chatmem.memory.base import BaseStrategy
    from chatmem.providers.base import Provider


class ProblemKind(Enum):
    """Why a plugin was skipped."""

    IMPORT_FAILED = "import_failed"
    """Loading the entry point raised (a missing module, a syntax error, a missing name)."""
    NO_HOOK = "no_hook"
    """The entry point names a module without a `register` function, or nothing callable."""
    REGISTER_FAILED = "register_failed"
    """Its `register(plugins)` raised."""
    REJECTED = "rejected"
    """It registered something chatmem cannot use: the wrong type, or a name that is
    invalid or already taken (a built-in's, or another plugin's: both are skipped)."""
    SLOW = "slow"
    """Not skipped: it loaded, but its import and register took SLOW_LOAD seconds or more,
    which every command that loads the registries waits for (the one kind that is no
    reason to skip it: `Registries.problems` leaves it out, a listener hears it)."""


WHAT_WENT_WRONG = {
    ProblemKind.IMPORT_FAILED: "could not be imported",
    ProblemKind.NO_HOOK: "nothing to call",
    ProblemKind.REGISTER_FAILED: "its register(plugins) raised",
    ProblemKind.REJECTED: "registered something chatmem cannot use",
}
"""Why a plugin was skipped, in words: the CLI's warning line and chatmem.testing's."""


@dataclass(frozen=True)
class PluginSource:
    """Where registrations came from: the entry point (`name = value`) and its distribution."""

    name: str
    value: str
    dist: str | None = None
    version: str | None = None
    builtin: bool = False


@dataclass(frozen=True)
class PluginProblem:
    plugin: PluginSource
    kind: ProblemKind
    detail: str
    """The exception or the refusal, as one line."""


@dataclass(frozen=True)
class ProviderEntry:
    """A registered chat provider: `create(settings)` opens it; `models(settings)` lists what
    it serves (`chatmem models`), None for just the configured model."""

    name: str
    create: Callable[[Settings], Provider]
    models: Callable[[Settings], list[str]] | None
    plugin: PluginSource


@dataclass(frozen=True)
class EmbedderEntry:
    """A registered embedder: `create(settings)` opens it."""

    name: str
    create: Callable[[Settings], Embedder]
    plugin: PluginSource


class Plugins:
    """What a plugin's `register(plugins)` adds to. Registrations are checked when
    `register` returns; if any is refused, none of the plugin's is kept."""

    def __init__(self) -> None:
        self.strategies: list[Any] = []
        self.providers: list[tuple[Any, Any, Any]] = []
        self.embedders: list[tuple[Any, Any]] = []

    def add_strategy(self, cls: type[BaseStrategy]) -> None:
        """A strategy class (a subclass of chatmem.memory.base.BaseStrategy), by its `name`."""
        self.strategies.append(cls)

    def add_provider(self, name: str, create: Callable[[Settings], Provider], *,
                     models: Callable[[Settings], list[str]] | None = None) -> None:
        """A chat provider `--provider NAME` chooses: `create(settings)` returns a Provider;
        `models(settings)`, if given, lists the models `chatmem models` shows."""
        self.providers.append((name, create, models))

    def add_embedder(self, name: str, create: Callable[[Settings], Embedder]) -> None:
        """An embedder `[embeddings] provider = NAME` chooses: `create(settings)` returns one."""
        self.embedders.append((name, create))


def check_entries(kind: str, entries: Sequence[ProviderEntry] | Sequence[EmbedderEntry],
                   taken: Mapping[str, Any], origins: Mapping[tuple[str, str], PluginSource],
                   words: Sequence[str]) -> None:
    from chatmem.memory.registry import VALID_NAME

    names: set[str] = set()
    for entry in entries:
        if not isinstance(entry.name, str) or not VALID_NAME.fullmatch(entry.name):
            raise ValueError(f"{kind} name must be lowercase letters, digits, '-' or '_' "
                             f"(got {entry.name!r})")
        if entry.name in words:
            raise ValueError(f"{kind} name {entry.name!r} is reserved")
        if entry.name in taken or entry.name in names:
            owner = origins.get((kind, entry.name))
            by = f" by {registered_by(owner)}" if owner else ""
            raise ValueError(f"{kind} {entry.name!r} is already registered{by}")
        if not callable(entry.create):
            raise TypeError(f"{kind} {entry.name!r}: create must be callable, "
                            f"got {type(entry.create).__name__}")
        names.add(entry.name)


def registered_by(source: PluginSource) -> str:
    """`chatmem itself`, or `plugin echo (chatmem-echo 0.1.0)`, for a refusal's detail."""
    if source.builtin:
        return "chatmem itself"
    dist = " ".join(filter(None, (source.dist, source.version)))
    return f"plugin {source.name}" + (f" ({dist})" if dist else "")
