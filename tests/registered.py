"""The registries tests build strategies, providers and embedders from: the real ones,
loaded as the CLI loads them (chatmem's own, and any plugin installed in this environment)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatmem.memory.base import Strategy
from chatmem.memory.spec import StrategySpec
from chatmem.plugins import load_registries

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
