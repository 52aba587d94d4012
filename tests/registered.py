"""The registries tests build strategies, providers and embedders from: the real ones,
loaded as the CLI loads them (chatmem's own, and any plugin installed in this environment)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from chatmem.config.settings import Settings
from chatmem.engine import Engine
from chatmem.engine import open_session as open_session_of
from chatmem.memory.base import Strategy
from chatmem.memory.registry import StrategyRegistry
from chatmem.memory.spec import StrategySpec
from chatmem.plugins import load_registries
from chatmem.providers.base import Provider
from chatmem.store.protocols import TurnStore

REGISTRIES = load_registries()
STRATEGIES = REGISTRIES.strategies
create_provider = REGISTRIES.create_provider
create_embedder = REGISTRIES.create_embedder
BUILT_IN = [name for name in STRATEGIES if (origin := REGISTRIES.origin("strategy", name))
            and origin.builtin]
"""chatmem's own strategies: what its promises (complexity, recall figures) are about."""


def create_strategy(text: str, params: Mapping[str, Any] | None = None) -> Strategy:
    """`create_strategy("window", {"k": "3"})`: parsed and built as `-s window -p k=3` is."""
    return STRATEGIES.strategy(text, params)


def parse_spec(text: str, shared: Mapping[str, Any] | None = None) -> StrategySpec:
    """`window:k=2` as `-s window:k=2` reads it; `shared` (--param) fills what it leaves out."""
    return STRATEGIES.parse(text, shared)


S = TypeVar("S", bound=TurnStore)


def open_session(store: S, settings: Settings, provider: Provider, name: str, *,
                 strategy: str | StrategySpec | None = None,
                 params: Mapping[str, Any] | None = None,
                 strategies: StrategyRegistry | None = None, **options: Any) -> Engine[S]:
    """chatmem.engine.open_session with the strategy named as text, `-s window -p k=3`
    (parsed here with `params`, as the CLI parses it), built from the registries loaded
    now (a test's plugin included) unless `strategies` names others."""
    strategies = strategies or load_registries().strategies
    if isinstance(strategy, str):
        strategy, params = strategies.parse(strategy, params), None
    return open_session_of(store, settings, provider, name, strategy=strategy, params=params,
                           strategies=strategies, **options)
