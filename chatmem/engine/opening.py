"""Opening a session: resume it or create it, and give it a strategy, a helper model for
strategy calls and an embedder, as the engine that runs its turns
(chatmem.engine.turns)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import tzinfo
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from chatmem.activity import QUIET, Activity
from chatmem.config.pairs import split_names
from chatmem.config.schema import check_built_at
from chatmem.config.settings import check_not_a_key
from chatmem.engine.preflight import without_typed_credentials
from chatmem.engine.turns import Engine
from chatmem.errors import StrategyError, StrategyFailed, StrategyGone
from chatmem.memory.base import Strategy
from chatmem.memory.params import format_params, strategy_label
from chatmem.memory.registry import StrategyRegistry
from chatmem.memory.spec import StrategySpec, split_text
from chatmem.notices import Notice
from chatmem.providers.base import Provider
from chatmem.session_notices import SavedParamsDropped, StrategyChanged, SystemPromptReplaced
from chatmem.store import SessionRecord
from chatmem.store.protocols import TurnStore
from chatmem.store.records import AccessLevel

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.embeddings import Embedder

S = TypeVar("S", bound=TurnStore)
"""The store given, kept as the engine's: the caller keeps its own type (`Engine[Store]`)."""


def resolve_strategy(
    settings: Settings, strategy: StrategySpec | None, params: Mapping[str, Any],
    session: SessionRecord | None, strategies: StrategyRegistry,
    tell: Callable[[Notice], None] | None = None,
) -> Strategy:
    """Flags win; a resumed session keeps its strategy; else the configured default.

    `strategy` is the spec given, parsed by the caller; with none, `params` (--param) apply
    to the session's strategy or the configured one. The config's [strategies.NAME] fills
    what the spec given leaves out. `strategies`: the registry to build from; `tell` hears
    of saved parameters the installed strategy no longer takes (SavedParamsDropped).
    """
    if strategy is None:
        if session is not None:
            gone = [part for part in session.strategy.split("+") if part not in strategies]
            if gone:
                # Its plugin was uninstalled, or fails to load: say whose strategy it is.
                raise StrategyGone(session.name, gone[0])
            return _resumed(session, params, strategies, tell)
        return configured_strategy(settings, strategies, params)
    if params:
        raise ValueError("a StrategySpec holds its parameters: parse them with its text")
    return strategies.create(with_config_table(strategy, settings, strategies))


def configured_strategy(settings: Settings, strategies: StrategyRegistry,
                        params: Mapping[str, Any] | None = None) -> Strategy:
    """The configured default strategy with its [strategies.NAME] table and `params`.
    A name no installed plugin provides (its plugin uninstalled, or failing to load) was
    let be as the settings loaded, so the commands that need no strategy run: this, the
    one that needs it, names the setting that chose it and the way on."""
    name = settings.strategy
    check_config_tables(settings, strategies, name)
    try:
        return strategies.strategy(name, {**settings.params_for(name), **(params or {})})
    except StrategyError as e:
        if all(part in strategies for part in split_text(name)[0]):
            raise
        raise StrategyError(settings.unprovided("strategy", str(e)), listed=e.listed
                            ) from None


def _resumed(session: SessionRecord, params: Mapping[str, Any], strategies: StrategyRegistry,
             tell: Callable[[Notice], None] | None) -> Strategy:
    """The session's strategy with its saved parameters and `params`. A plugin upgrade may
    drop a parameter or narrow its values: the saved ones it refuses are left out (they
    stay stored, for the version that takes them), so the session still opens; `params`,
    given now, are checked strictly. A plugin's __init__ that raises on a saved value
    refuses it as well as its declared rule would."""
    chosen, dropped = saved_strategy(session.strategy, session.params, strategies,
                                     session.name, given=params)
    if dropped is not None and tell is not None:
        tell(dropped)
    return chosen


def saved_strategy(name: str, saved: Mapping[str, Any], strategies: StrategyRegistry,
                   session: str, *, given: Mapping[str, Any] | None = None,
                   fixed: Collection[str] = ()) -> tuple[Strategy, SavedParamsDropped | None]:
    """Strategy `name` on session `session`'s `saved` parameters and those `given` now,
    the saved ones the installed version no longer takes left out as opening the session
    leaves them out, with the notice saying which (None: all were taken); raises as
    `strategies.strategy` does when leaving them out does not help (`given` are at fault).
    The saved parameters of the `fixed` parts (chatmem's own, read from a transcript) are
    checked as given: only a plugin's version changes under a saved session."""
    given = given or {}
    try:
        return strategies.strategy(name, {**saved, **given}), None
    except (StrategyError, StrategyFailed):
        parts = split_text(name)[0]
        held = {k: v for k, v in saved.items()
                if k not in given and _owner(strategies, parts, k) in fixed}
        if held:
            strategies.strategy(name, held)  # refused as given, naming the fixed part's
        kept, unknown, refused = _saved_params_taken(
            name, {k: v for k, v in saved.items() if k not in given and k not in held},
            strategies, held)
        if not unknown and not refused:
            raise
    return (strategies.strategy(name, {**held, **kept, **given}),
            SavedParamsDropped(session, name, tuple(unknown), tuple(refused)))


def _saved_params_taken(
    name: str, saved: Mapping[str, Any], strategies: StrategyRegistry,
    held: Mapping[str, Any],
) -> tuple[dict[str, Any], list[str], list[str]]:
    """Of a session's `saved` parameters, those the installed strategy `name` takes beside
    the `held` ones, and labels of those it no longer declares and of those whose value it
    now refuses."""
    parts, _ = split_text(name)
    kept: dict[str, Any] = {}
    unknown: list[str] = []
    refused: list[str] = []
    for key, value in saved.items():
        label = format_params({key: value})
        if not _declares(strategies, parts, key):
            unknown.append(label)
            continue
        try:
            strategies.strategy(name, {**held, **kept, key: value})
        except (StrategyError, StrategyFailed):
            refused.append(label)
            continue
        kept[key] = value
    return kept, unknown, refused


def _owner(strategies: StrategyRegistry, parts: tuple[str, ...], key: str) -> str | None:
    """The one part of `parts` whose parameter `key` is (`part.key` in a combination, as
    stored), None when it names none or several."""
    owner, dot, _ = key.partition(".")
    if len(parts) > 1 and dot:
        return owner if owner in parts else None
    declaring = [p for p in parts if any(d.name == key for d in strategies[p].PARAMS)]
    return declaring[0] if len(declaring) == 1 else None


def _declares(strategies: StrategyRegistry, parts: tuple[str, ...], key: str) -> bool:
    """Whether exactly one of `parts` declares the parameter `key` (`part.key` in a
    combination, as stored)."""
    owner, dot, bare = key.partition(".")
    if len(parts) > 1 and dot:
        parts, key = tuple(p for p in parts if p == owner), bare
    return sum(any(p.name == key for p in strategies[part].PARAMS) for part in parts) == 1


def with_config_table(spec: StrategySpec, settings: Settings,
                      strategies: StrategyRegistry) -> StrategySpec:
    """`spec` with what the config's [strategies.NAME] gives that it leaves out (a value
    given in the spec wins). Every way of naming a strategy (-s, a template, /strategy,
    /template, the what-ifs of inspect and MCP, replay, eval, compare_strategies) comes
    through here, so the same name builds the same strategy."""
    configured = settings.params_for(spec.name)
    if not configured:
        return spec
    check_config_tables(settings, strategies, spec.name)
    return spec.keeping(strategies.parse(spec.name, configured))


def check_config_tables(settings: Settings, strategies: StrategyRegistry, name: str) -> None:
    """ConfigError naming the file, the table and its key unless each [strategies.NAME]
    table strategy `name` takes (its own, a combination's members') builds on the strategy
    installed. Checked here, where the strategy is used, not as the settings load: a
    plugin's new version renaming a parameter refused every command, `sessions list` too,
    as an uninstalled plugin's name does not. A part nothing installed provides is left to
    the caller, which names it."""
    parts = split_names(name)
    for table_name in dict.fromkeys([*parts, name]):
        table = settings.strategies.get(table_name)
        if not table or not all(part in strategies for part in split_names(table_name)):
            continue
        source = settings.source_of(f"strategies.{table_name}.{next(iter(table))}")
        where = f"{source}: key 'strategies.{table_name}'"
        check_built_at(where, partial(strategies.parse, table_name, table))


def open_session(
    store: S,
    settings: Settings,
    provider: Provider,
    name: str,
    *,
    strategies: StrategyRegistry,
    helper: Provider | None = None,
    strategy: StrategySpec | None = None,
    params: Mapping[str, Any] | None = None,
    system: str | None = None,
    embedder: Embedder | Callable[[], Embedder | None] | None = None,
    activity: Activity = QUIET,
    allow_over_budget: bool = False,
    save: bool = True,
    keeps_memory: bool = True,
    budget: int | None = None,
    typed_secrets: Mapping[str, str] | None = None,
) -> Engine[S]:
    """Resume the named session or create it, and return its engine.

    `helper` answers the strategy's own model calls (None: the chat model); `embedder`, or
    how to open one on first use, ranks recall by meaning. A strategy or system prompt
    given for a session that exists becomes its own; with `save` False it holds for this
    engine only and the stored session is left as it is. `budget` overrides the settings'
    context budget (the REPL's /budget). `strategies`: the registry `strategy` names
    parts of, and the session's strategy is built from. `typed_secrets`: what is masked in
    what the user types (Engine.typed_secrets).
    """
    zone = settings.zone  # a timezone no zone has is refused before a session is created
    session = store.sessions.find_session(name)
    notices: list[Notice] = []
    if system:  # stored and sent as a turn's input is: no byte of a key in the history
        [system], replaced = without_typed_credentials(settings, system, system=True,
                                                       secrets=typed_secrets)
        notices += replaced
    chosen = resolve_strategy(settings, strategy, params or {}, session, strategies,
                              tell=notices.append)
    created = False
    if session is None:
        check_not_a_key(settings, name, "the session's name", "name the session")
        default = settings.system if system is None else None
        if default:  # the config's or $CHATMEM_SYSTEM: masked as a typed one is
            [default], replaced = without_typed_credentials(settings, default, system=True,
                                                            secrets=typed_secrets)
            notices += replaced
        session, created = store.sessions.find_or_create_session(
            name, chosen.name, dict(chosen.params), provider=provider.name,
            model=provider.model,
            # "" is no prompt, stored as /system "" stores it.
            system=(system if system is not None else default) or None,
            user=settings.user,
        )
        if not created:
            # Another process created it a moment ago: join it as if resuming.
            chosen = resolve_strategy(settings, strategy, params or {}, session, strategies,
                                      tell=notices.append)
    changes: dict[str, Any] = {}
    owner = None if created else _settings_owner(store, session)
    keep = save and owner is None
    if not created:
        if strategy is not None or params:
            changes.update(strategy=chosen.name, params=dict(chosen.params))
            before = strategy_label(session.strategy, session.params)
            after = strategy_label(chosen.name, chosen.params)
            if before != after:
                notices.append(StrategyChanged(name, before, after, kept=keep, owner=owner))
        if system is not None:
            # "" is no prompt, stored as a new session's and /system "" store it: given
            # again, nothing changes and nothing is said.
            changes["system"] = system or None
            if changes["system"] != session.system:
                notices.append(SystemPromptReplaced(name, len(session.system or ""), len(system),
                                                    kept=keep, owner=owner))
        # Kept with the first stored turn (Engine.pending): a refused turn changes nothing;
        # without `save` (or on another's session), never stored: they hold for this engine.
        session = dataclasses.replace(session, **changes)
    engine = Engine(store, session, provider, chosen,
                    budget=settings.context_budget if budget is None else budget,
                    helper=helper, settings=settings, embedder=embedder, activity=activity,
                    allow_over_budget=allow_over_budget, keeps_memory=keeps_memory,
                    notices=notices, pending=changes if keep else {}, created=created,
                    zone=zone, typed_secrets=typed_secrets)
    engine.settings_owner = owner
    engine.chosen_here = frozenset(
        [*(["strategy", "params"] if strategy is not None or params else []),
         *(["system"] if system is not None else [])])
    return engine


def _settings_owner(store: TurnStore, session: SessionRecord) -> str | None:
    """The session's owner when this role shares it for writing (only the owner changes its
    settings); None when it is this role's own (always, in a file)."""
    access = store.sessions.session_access(session.id)
    return access.owner if access.level is AccessLevel.WRITE else None


def engine_over(
    store: S,
    session: SessionRecord,
    provider: Provider,
    strategy: Strategy,
    *,
    budget: int | None,
    helper: Provider | None = None,
    embedder: Embedder | None = None,
    activity: Activity = QUIET,
    notices: Sequence[Notice] = (),
    zone: tzinfo | None = None,
) -> Engine[S]:
    """An engine over a session as it is stored, for building contexts and replaying turns
    (inspect --next, what-ifs, replay, eval): nothing about the session changes, and its
    vectors are embedded before each build, so results never depend on timing. Ctrl-C ends
    the command rather than leaving a result half built (`Engine.interrupt_ends`). `notices`:
    what resolving its strategy told. `zone`: the user's days' (default: the system's)."""
    return Engine(store, session, provider, strategy, budget=budget, helper=helper,
                  embedder=embedder, activity=activity, background_indexing=False,
                  notices=notices, interrupt_ends=True, zone=zone)
