"""Registries of strategies, providers and embedders, filled by plugins.

A plugin is a module (or a function) named by an entry point in the group
`chatmem.plugins`; loading the registries calls its `register(plugins)` with a
`Plugins` object to add to. chatmem's own strategies, providers and embedders
register the same way: `chatmem.builtin_plugin` is loaded first, through the same
code path, then every installed entry point in a stable order.

Plain `importlib.metadata`, not pluggy: one hook that adds to three registries needs no
hook specifications, call ordering or results to collect, and no new dependency.

Nothing is imported or scanned until a registry is first used (`chatmem --help` reads
no entry point). A plugin that cannot be used (it fails to import, its `register`
raises, it registers the wrong type or a name already taken; two plugins of one name
are both skipped) is skipped whole and recorded as a `PluginProblem`; the front end
words it as one warning.
`load_registries()` gives the one `Registries` of the process.
"""

from __future__ import annotations

import functools
import importlib
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from chatmem.config.pairs import split_names
from chatmem.errors import ChatmemError, ConfigError, UndeclaredParam, one_line
from chatmem.names import did_you_mean
from chatmem.plugin_contents import EMBEDDER_WORDS, PROVIDER_WORDS, Contents, admit
from chatmem.plugin_entries import (
    EmbedderEntry,
    PluginProblem,
    PluginSource,
    ProblemKind,
    ProviderEntry,
    registered_by,
)
from chatmem.plugin_entries import Plugins as Plugins  # plugins import it from here (README)
from chatmem.plugin_output import labelled, plugin_prints_to_stderr
from chatmem.privacy.secrets import plugin_mask

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from chatmem.config.settings import Settings
    from chatmem.embeddings.base import Embedder
    from chatmem.memory.registry import StrategyRegistry
    from chatmem.providers.base import Provider

ENTRY_POINT_GROUP = "chatmem.plugins"
BUILTIN_PLUGINS = ("chatmem.builtin_plugin",)
"""Modules registered before any entry point, as if each were one."""
HOOK = "register"
SLOW_LOAD = 3.0
"""Seconds a plugin's import and register may take before the loading says so: each
command that needs a strategy, a provider or an embedder waits for them."""

ENTRY_POINT_VALUE = re.compile(r"[\w.]+(?:\s*:\s*[\w.]+)?(?:\s*\[[^\]]*\])?")
"""`module` or `module:function` (extras in brackets allowed), as the packaging spec has it:
another value would fail inside importlib with a message that names nothing."""


class Registries:
    """The strategies, providers and embedders chatmem can use, loaded on first use.

    `entry_points` gives the plugins to load (default: the installed ones in
    ENTRY_POINT_GROUP); built-ins (BUILTIN_PLUGINS) always come first.
    """

    def __init__(self, entry_points: Callable[[], Iterable[EntryPoint]] | None = None) -> None:
        self._entry_points = entry_points or installed_entry_points
        self._contents: Contents | None = None
        self._listener: Callable[[PluginProblem], None] | None = None
        self._reported = 0
        # A server's requests share one Registries: the first use loads it, once. Re-entrant:
        # a plugin's register may itself look at the registries (it sees what is loaded).
        self._loading = threading.RLock()
        self._ready = False

    # -- loading ---------------------------------------------------------------------

    def _loaded(self) -> Contents:
        if self._ready and self._contents is not None:
            return self._contents
        with self._loading:  # another thread waits here until loading is done
            if self._contents is None:
                from chatmem.memory.registry import StrategyRegistry

                self._contents = Contents(StrategyRegistry())
                # What a plugin prints while it loads (a debug line) goes to stderr: stdout
                # holds a command's --json, ask's reply, and MCP's protocol stream.
                with plugin_prints_to_stderr():
                    for source, load in self._plugins():
                        with labelled(None if source.builtin else f"{registered_by(source)}: "):
                            began = time.monotonic()
                            self._load(source, load)
                            took = time.monotonic() - began
                        if took >= SLOW_LOAD and not source.builtin:
                            self._contents.problems.append(PluginProblem(
                                source, ProblemKind.SLOW, f"{took:.1f}"))
                self._ready = True
                self._report()
            return self._contents

    def _plugins(self) -> Iterable[tuple[PluginSource, Callable[[], Any]]]:
        for module in BUILTIN_PLUGINS:
            yield (PluginSource("chatmem", module, builtin=True),
                   functools.partial(importlib.import_module, module))
        seen: set[tuple[str, str]] = set()
        points = sorted(self._entry_points(),
                        key=lambda p: (_dist_name(p) or "", p.name, p.value))
        for point in points:
            # A distribution seen twice on sys.path (a venv over system site-packages)
            # is one plugin.
            if (point.name, point.value) in seen:
                continue
            seen.add((point.name, point.value))
            dist = getattr(point, "dist", None)
            yield (PluginSource(point.name, point.value, _dist_name(point),
                                getattr(dist, "version", None)), point.load)

    def _load(self, source: PluginSource, load: Callable[[], Any]) -> None:
        contents = self._contents
        assert contents is not None
        # What a plugin's import or register raises may quote a key it read (no settings are
        # loaded yet: the environment's, where chatmem reads them by default).
        secrets = plugin_mask()

        def problem(kind: ProblemKind, detail: str) -> None:
            contents.problems.append(PluginProblem(source, kind, secrets.mask(detail)))

        if not ENTRY_POINT_VALUE.fullmatch(source.value):
            contents.problems.append(PluginProblem(
                source, ProblemKind.IMPORT_FAILED,
                f"entry point value {source.value!r} is not module or module:function"))
            return
        try:
            loaded = load()
        except UndeclaredParam as e:  # raised as a strategy class is defined: it imported
            problem(ProblemKind.REJECTED, str(e))
            return
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # a plugin's import may raise anything (CancelledError)
            problem(ProblemKind.IMPORT_FAILED, one_line(e))
            return
        hook = loaded if callable(loaded) and not isinstance(loaded, type) else getattr(
            loaded, HOOK, None)
        if not callable(hook):
            contents.problems.append(PluginProblem(
                source, ProblemKind.NO_HOOK,
                f"{source.value} has no {HOOK}(plugins) function"))
            return
        staged = Plugins()
        try:
            hook(staged)
        except UndeclaredParam as e:  # a strategy class defined within register
            problem(ProblemKind.REJECTED, str(e))
            return
        except KeyboardInterrupt:
            raise
        except BaseException as e:
            problem(ProblemKind.REGISTER_FAILED, one_line(e))
            return
        try:
            admit(contents, source, staged)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # checks call the plugin's classes: anything
            problem(ProblemKind.REJECTED, " ".join(str(e).split()) or one_line(e))

    # -- problems ----------------------------------------------------------------------

    def listen(self, listener: Callable[[PluginProblem], None] | None) -> None:
        """Tell `listener` about each plugin problem once: those found already, and those
        found when the registries load (the front end words them; core code never prints)."""
        self._listener = listener
        if self._contents is not None:
            self._report()

    def _report(self) -> None:
        if self._listener is None or self._contents is None:
            return
        problems = self._contents.problems
        while self._reported < len(problems):
            self._reported += 1
            self._listener(problems[self._reported - 1])

    @property
    def problems(self) -> list[PluginProblem]:
        """The plugins skipped, and why (one that only loaded slowly is no problem here)."""
        return [p for p in self._loaded().problems if p.kind is not ProblemKind.SLOW]

    # -- the registries ------------------------------------------------------------------

    @property
    def strategies(self) -> StrategyRegistry:
        return self._loaded().strategies

    @property
    def providers(self) -> Mapping[str, ProviderEntry]:
        return self._loaded().providers

    @property
    def embedders(self) -> Mapping[str, EmbedderEntry]:
        return self._loaded().embedders

    def origin(self, kind: str, name: str) -> PluginSource | None:
        """Which plugin registered the `kind` ("strategy", "provider", "embedder") `name`."""
        return self._loaded().origins.get((kind, name))

    # -- what configuration checks names against (chatmem.config.schema.Registered) -----

    def check_strategy(self, name: str, params: Mapping[str, Any]) -> None:
        """Raise StrategyError (StrategyFailed: a plugin's own check or bug) unless `name`
        with `params` is a strategy chatmem can build. A name none registered and near none
        (`windw` is a typo: refused) is let be: an uninstalled plugin's, or one failing to
        load, stopped every command. Choosing it fails naming the setting (configured_strategy)."""
        from chatmem.memory.registry import VALID_NAME
        known = self.strategies.names()
        if any(part not in known and VALID_NAME.fullmatch(part) and not did_you_mean(part, known)
               for part in split_names(name)):
            return
        self.strategies.parse(name, params)

    def provider_names(self) -> Sequence[str]:
        return [*PROVIDER_WORDS, *self.providers]

    def embedder_names(self) -> Sequence[str]:
        return [*EMBEDDER_WORDS[:1], *self.embedders, *EMBEDDER_WORDS[1:]]

    # -- building ----------------------------------------------------------------------

    def provider_entry(self, settings: Settings) -> ProviderEntry:
        """The provider `settings` choose (`auto` resolved, see chatmem.providers)."""
        from chatmem.providers import resolve_provider_name

        name = resolve_provider_name(settings)
        entry = self.providers.get(name)
        if entry is None:
            # A name none provides was let be as the settings loaded (check_provider_name).
            said = f"unknown provider {name!r} (valid: {', '.join(self.provider_names())})"
            raise ConfigError(settings.unprovided("provider", said)
                              if name == settings.provider else said)
        return entry

    def create_provider(self, settings: Settings) -> Provider:
        """The provider `settings` choose; a plugin's is guarded (chatmem.providers.guarded):
        whatever it raises reaches the front end as a ProviderError naming it."""
        from chatmem.config.options import chat_reply_cap
        from chatmem.plugin_calls import guarded
        from chatmem.providers import masked, secrets_of
        from chatmem.providers.guarded import GuardedProvider, failure, not_a_provider

        entry = self.provider_entry(settings)
        if entry.plugin.builtin:
            return entry.create(settings)
        # A plugin knows the chat's reply cap only as max_reply_tokens (`-o`'s, a served
        # request's max_tokens): the built-in providers read it from the options.
        settings = replace(settings, max_reply_tokens=chat_reply_cap(settings))
        # A plugin's replies, errors and model names are masked as chatmem's own are; its
        # errors also of a key read where chatmem reads one by default (it may not ask settings).
        mask = plugin_mask(secrets_of(settings))
        with plugin_prints_to_stderr():
            provider = guarded(lambda e: failure(entry.name, e, mask, "could not start"),
                               lambda: entry.create(settings), mask.mask)
        wrong = guarded(lambda e: failure(entry.name, e, mask, "could not start"),
                        lambda: not_a_provider(provider),  # its attributes may be properties
                        mask.mask)
        if wrong is not None:
            raise failure(entry.name, wrong, mask, "could not start")
        return masked(GuardedProvider(provider, mask, entry.name), settings)

    def available_models(self, settings: Settings) -> tuple[str, list[str]]:
        """(provider name, model names) of what the chosen provider serves."""
        from chatmem.plugin_calls import guarded, kinds_of
        from chatmem.providers import secrets_of
        from chatmem.providers.guarded import failure

        entry = self.provider_entry(settings)
        models = entry.models
        if models is None:
            return entry.name, [settings.model or entry.name]
        if entry.plugin.builtin:
            return entry.name, models(settings)
        mask = plugin_mask(secrets_of(settings))

        def refused(error: BaseException) -> ChatmemError:
            return failure(entry.name, error, mask, "could not list its models")

        with plugin_prints_to_stderr():
            given = guarded(refused, lambda: models(settings), mask.mask)
            names = guarded(refused, lambda: list(given), mask.mask) \
                if isinstance(given, Iterable) and not isinstance(given, str | bytes) else given
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            # Names are keys and text everywhere they go (a listing, --json, /v1/models).
            raise failure(entry.name, f"its models returned {kinds_of(names)}, not a list of "
                          "model names (text)", mask, "could not list its models")
        return entry.name, [mask.mask(name) for name in names]

    def create_embedder(self, name: str, settings: Settings | None = None) -> Embedder:
        """The embedder registered as `name`; a plugin's is guarded (embeddings.guarded):
        whatever it raises is one EmbedderFailed line, the settings' secrets masked."""
        from chatmem.config.settings import Settings
        from chatmem.embeddings.guarded import GuardedEmbedder
        from chatmem.errors import EmbedderFailed
        from chatmem.plugin_calls import guarded
        from chatmem.providers import secrets_of

        entry = self.embedders.get(name)
        if entry is None:
            said = f"unknown embedder {name!r} (valid: {', '.join(self.embedder_names())})"
            raise ConfigError(settings.unprovided("embeddings.provider", said)
                              if settings is not None and name == settings.embeddings.provider
                              else said)
        settings = settings or Settings()
        if entry.plugin.builtin:
            return entry.create(settings)
        # A plugin's embedder reads the key as it likes (Settings().api_key(), the environment).
        mask = plugin_mask(secrets_of(settings))
        with plugin_prints_to_stderr():
            embedder = guarded(lambda e: EmbedderFailed(name, e, "could not start"),
                               lambda: entry.create(settings), mask.mask)
        checked = GuardedEmbedder(embedder, name, mask.mask)
        try:
            # Read once now, so a wrong key or size is refused before a turn, not found
            # when a stored turn's vectors are counted (ask then ended with an error).
            checked.key, checked.dimensions  # noqa: B018
        except EmbedderFailed as e:
            raise EmbedderFailed(name, e.cause, "could not start") from None
        return checked

    def resolve_embedder(self, settings: Settings) -> Embedder | None:
        """The configured embedder; None for `none`, or for `auto` when the local one is not
        installed (recall then ranks by words and says so)."""
        from chatmem.embeddings import auto_embedder

        name = settings.embeddings.provider
        if name == "auto":
            name = auto_embedder() or "none"
        if name == "none":
            return None
        return self.create_embedder(name, settings)


def _dist_name(point: EntryPoint) -> str | None:
    dist = getattr(point, "dist", None)
    return dist.name if dist is not None else None


def installed_entry_points() -> Iterable[EntryPoint]:
    from importlib.metadata import entry_points

    return entry_points(group=ENTRY_POINT_GROUP)


@functools.cache
def load_registries() -> Registries:
    """The registries of this process (loaded on first use, then kept)."""
    return Registries()
