"""What chatmem's plugin registries hold once loaded, and the rule for a name two plugins
register: neither is used (chatmem.plugins loads them), and how one plugin's are admitted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from chatmem.plugin_entries import (
    EmbedderEntry,
    PluginProblem,
    Plugins,
    PluginSource,
    ProblemKind,
    ProviderEntry,
    check_entries,
    registered_by,
)

if TYPE_CHECKING:
    from chatmem.memory.registry import StrategyRegistry

PROVIDER_WORDS = ("auto",)
"""Names `provider` takes that are no registered provider (auto: see providers/__init__)."""
EMBEDDER_WORDS = ("auto", "none")
"""Names `[embeddings] provider` takes that are no registered embedder."""


@dataclass
class Contents:
    """What the registries hold once loaded (chatmem.plugins.Registries)."""

    strategies: StrategyRegistry
    providers: dict[str, ProviderEntry] = field(default_factory=dict)
    embedders: dict[str, EmbedderEntry] = field(default_factory=dict)
    origins: dict[tuple[str, str], PluginSource] = field(default_factory=dict)
    problems: list[PluginProblem] = field(default_factory=list)
    contested: dict[tuple[str, str], list[PluginSource]] = field(default_factory=dict)
    """Names two plugins registered, and by whom: neither plugin is used, nor a later one
    of that name (whichever sorted first would run the other's sessions, on its state)."""


def admit(contents: Contents, source: PluginSource, staged: Plugins) -> None:
    """Check everything `staged` (what one plugin's register added) holds, then add it all
    to `contents` (or raise and add nothing)."""
    refuse_contested(contents, source, staged)
    providers = [ProviderEntry(n, c, m, source) for n, c, m in staged.providers]
    check_entries("provider", providers, contents.providers, contents.origins,
                   PROVIDER_WORDS)
    for entry in providers:
        if entry.models is not None and not callable(entry.models):
            raise TypeError(f"provider {entry.name!r}: models must be callable")
    embedders = [EmbedderEntry(n, c, source) for n, c in staged.embedders]
    check_entries("embedder", embedders, contents.embedders, contents.origins,
                   EMBEDDER_WORDS)
    for cls in staged.strategies:
        # Named by the plugin holding it, as a provider's clash is: the user uninstalls
        # a distribution, which a class's module path does not name.
        name = getattr(cls, "name", None)
        owner = contents.origins.get(("strategy", name)) if isinstance(name, str) else None
        if owner is not None:
            raise ValueError(f"strategy {cls.name!r} is already registered by "
                             f"{registered_by(owner)}")
    # Last of the checks, and all or none: each strategy is checked (built) once here.
    contents.strategies.add(*staged.strategies,
                            label=None if source.builtin else f"{registered_by(source)}: ")
    for cls in staged.strategies:
        contents.origins[("strategy", cls.name)] = source
    for entry in providers:
        contents.providers[entry.name] = entry
        contents.origins[("provider", entry.name)] = source
    for embedder in embedders:
        contents.embedders[embedder.name] = embedder
        contents.origins[("embedder", embedder.name)] = source


def refuse_contested(contents: Contents, source: PluginSource, staged: Plugins) -> None:
    """Raise if `staged` names what another plugin (not chatmem) registered: that one is
    withdrawn too. Which came first is only the order of distribution names, so a plugin
    installed later could otherwise take a name over, and with it the sessions saved
    with it, their stored parameters and the state kept under that name."""
    names = [*(("strategy", getattr(cls, "name", None)) for cls in staged.strategies),
             *(("provider", entry[0]) for entry in staged.providers),
             *(("embedder", entry[0]) for entry in staged.embedders)]
    if any((owner := contents.origins.get(key)) is not None and owner.builtin
           for key in names):
        return  # refused as any plugin taking chatmem's names is: no other is withdrawn
    clashes: list[tuple[tuple[str, str], list[PluginSource]]] = []
    for key in names:
        if not isinstance(key[1], str):
            continue
        owner = contents.origins.get(key)
        if owner is not None and not owner.builtin and owner != source:
            contents.contested[key] = [owner]
            _withdraw(contents, owner, key, source)
        if key in contents.contested:
            contents.contested[key].append(source)
            clashes.append((key, contents.contested[key]))
    if clashes:
        (kind, name), holders = clashes[0]
        others = ", ".join(registered_by(h) for h in holders if h != source)
        raise ValueError(f"{kind} {name!r} is registered by {others} too: neither is "
                         "used until one is uninstalled")


def _withdraw(contents: Contents, owner: PluginSource, key: tuple[str, str],
              by: PluginSource) -> None:
    """Take out all that `owner` registered, recorded as its problem."""
    mine = [k for k, s in contents.origins.items() if s == owner]
    for kind, name in mine:
        del contents.origins[(kind, name)]
        if kind == "strategy":
            contents.strategies.withdraw(name)
        elif kind == "provider":
            contents.providers.pop(name, None)
        else:
            contents.embedders.pop(name, None)
    contents.problems.append(PluginProblem(owner, ProblemKind.REJECTED, (
        f"{key[0]} {key[1]!r} is registered by {registered_by(by)} too: neither is used "
        "until one is uninstalled")))
