"""Opening a session: resume it or create it, and give it a strategy, a helper model for
strategy calls and an embedder, as the engine that runs its turns
(chatmem.engine.turns)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from chatmem.activity import QUIET, Activity
from chatmem.engine.turns import Engine
from chatmem.errors import Listed, StrategyError
from chatmem.memory.base import Strategy
from chatmem.memory.params import strategy_label
from chatmem.memory.registry import StrategyRegistry
from chatmem.memory.spec import StrategySpec
from chatmem.notices import Notice, StrategyChanged, SystemPromptReplaced
from chatmem.providers.base import Provider
from chatmem.store import SessionRecord
from chatmem.store.protocols import TurnStore

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.embeddings import Embedder

S = TypeVar("S", bound=TurnStore)
"""The store given, kept as the engine's: the caller keeps its own type (`Engine[Store]`)."""


def resolve_strategy(
    settings: Settings, strategy: StrategySpec | None, params: Mapping[str, Any],
    session: SessionRecord | None, strategies: StrategyRegistry,
) -> Strategy:
    """Flags win; a resumed session keeps its strategy; else the configured default.

    `strategy` is the spec given, parsed by the caller; with none, `params` (--param) apply
    to the session's strategy or the configured one. The config's [strategies.NAME] fills
    what the spec given leaves out. `strategies`: the registry to build from.
    """
    if strategy is None:
        if session is not None:
            gone = [part for part in session.strategy.split("+") if part not in strategies]
            if gone:
                # Its plugin was uninstalled, or fails to load: say whose strategy it is.
                raise StrategyError(
                    f"session {session.name!r} keeps its memory with strategy "
                    f"{gone[0]!r}, which no installed plugin provides now; install it again, "
                    "or go on with another (-s NAME)", listed=Listed.STRATEGIES)
            return strategies.strategy(session.strategy, {**session.params, **params})
        name = settings.strategy
        return strategies.strategy(name, {**settings.params_for(name), **params})
    if params:
        raise ValueError("a StrategySpec holds its parameters: parse them with its text")
    return strategies.create(with_config_table(strategy, settings, strategies))


def with_config_table(spec: StrategySpec, settings: Settings,
                      strategies: StrategyRegistry) -> StrategySpec:
    """`spec` with what the config's [strategies.NAME] gives that it leaves out (a value
    given in the spec wins). Every way of naming a strategy (-s, a template, /strategy,
    /template, the what-ifs of inspect and MCP, replay, eval, compare_strategies) comes
    through here, so the same name builds the same strategy."""
    configured = settings.params_for(spec.name)
    if not configured:
        return spec
    return spec.keeping(strategies.parse(spec.name, configured))


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
) -> Engine[S]:
    """Resume the named session or create it, and return its engine.

    `helper` answers the strategy's own model calls (None: the chat model); `embedder`, or
    how to open one on first use, ranks recall by meaning. A strategy or system prompt
    given for a session that exists becomes its own; with `save` False it holds for this
    engine only and the stored session is left as it is. `budget` overrides the settings'
    context budget (the REPL's /budget). `strategies`: the registry `strategy` names
    parts of, and the session's strategy is built from.
    """
    session = store.sessions.find_session(name)
    chosen = resolve_strategy(settings, strategy, params or {}, session, strategies)
    created = False
    if session is None:
        session, created = store.sessions.find_or_create_session(
            name, chosen.name, dict(chosen.params), provider=provider.name,
            model=provider.model, system=system if system is not None else settings.system,
            user=settings.user,
        )
        if not created:
            # Another process created it a moment ago: join it as if resuming.
            chosen = resolve_strategy(settings, strategy, params or {}, session, strategies)
    notices: list[Notice] = []
    changes: dict[str, Any] = {}
    if not created:
        if strategy is not None or params:
            changes.update(strategy=chosen.name, params=dict(chosen.params))
            before = strategy_label(session.strategy, session.params)
            after = strategy_label(chosen.name, chosen.params)
            if before != after:
                notices.append(StrategyChanged(name, before, after, kept=save))
        if system is not None:
            changes["system"] = system
            if system != session.system:
                notices.append(SystemPromptReplaced(name, len(session.system or ""), len(system),
                                                    kept=save))
        # Kept with the first stored turn (Engine.pending): a refused turn changes nothing;
        # without `save`, never stored: they hold for this engine only.
        session = dataclasses.replace(session, **changes)
    return Engine(store, session, provider, chosen,
                  budget=settings.context_budget if budget is None else budget,
                  helper=helper, settings=settings, embedder=embedder, activity=activity,
                  allow_over_budget=allow_over_budget, keeps_memory=keeps_memory,
                  notices=notices, pending=changes if save else {}, created=created)


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
) -> Engine[S]:
    """An engine over a session as it is stored, for building contexts and replaying turns
    (inspect --next, what-ifs, replay, eval): nothing about the session changes, and its
    vectors are embedded before each build, so results never depend on timing."""
    return Engine(store, session, provider, strategy, budget=budget, helper=helper,
                  embedder=embedder, activity=activity, background_indexing=False)
