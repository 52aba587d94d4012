"""Memory strategies, registered by name.

`create_strategy("window", {"k": "3"})` parses and validates parameters;
`A+B` names a combination of two registered strategies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatmem.errors import Listed, StrategyError
from chatmem.memory.base import BaseStrategy, Strategy
from chatmem.memory.buffer import BufferStrategy
from chatmem.memory.combined import CombinedStrategy
from chatmem.memory.entity import EntityStrategy
from chatmem.memory.retrieval import RetrievalStrategy
from chatmem.memory.summary import SummaryStrategy
from chatmem.memory.summary_buffer import SummaryBufferStrategy
from chatmem.memory.token_budget import TokenBudgetStrategy
from chatmem.memory.window import WindowStrategy
from chatmem.names import did_you_mean

REGISTRY: dict[str, type[BaseStrategy]] = {
    cls.name: cls
    for cls in (
        BufferStrategy,
        WindowStrategy,
        TokenBudgetStrategy,
        EntityStrategy,
        RetrievalStrategy,
        SummaryStrategy,
        SummaryBufferStrategy,
    )
}


EXAMPLE_COMBINATIONS: list[str] = ["window+entity", "summary-buffer+retrieval"]
"""Combinations shown in help and covered by the contract test."""


def strategy_names() -> list[str]:
    return list(REGISTRY)


def contract_strategy_names() -> list[str]:
    """Every registered strategy plus the example combinations: what the contract test covers."""
    return [*REGISTRY, *EXAMPLE_COMBINATIONS]


def changed_params(spec: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A stored strategy's parameters that differ from their defaults, as listings show
    them; all of them when the strategy no longer builds (a newer version's name)."""
    try:
        return create_strategy(spec, params).changed_params()
    except StrategyError:
        return dict(params)


def kept_params(old: Strategy, spec: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters `old` changed from their defaults that `spec` shares (the same part, the
    same name) and `given` leaves out, keyed as `spec` takes them.

    A switch from `summary-buffer max_tokens=200` to `summary-buffer+entity` keeps
    `summary-buffer.max_tokens=200`; a value given with the switch wins.
    """
    parts = spec.split("+")
    if not all(part in REGISTRY for part in parts):
        return {}  # create_strategy names the unknown part

    def owned(key: str, default_owner: str | None) -> tuple[str | None, str]:
        owner, dot, sub = key.partition(".")
        if dot:
            return owner, sub
        owners = [p for p in parts if any(param.name == key for param in REGISTRY[p].PARAMS)]
        return (default_owner or (owners[0] if len(owners) == 1 else None)), key

    taken = {owned(key, None) for key in given}
    kept: dict[str, Any] = {}
    for key, value in old.changed_params().items():
        owner, sub = owned(key, None if "+" in old.name else old.name)
        if (owner in parts and (owner, sub) not in taken
                and any(param.name == sub for param in REGISTRY[owner].PARAMS)):
            kept[f"{owner}.{sub}" if len(parts) > 1 else sub] = value
    return kept


def create_strategy(spec: str, params: Mapping[str, Any] | None = None) -> Strategy:
    """Build a strategy from its name (or `A+B`) and raw parameters."""
    params = dict(params or {})
    if "+" in spec:
        return CombinedStrategy.from_spec(spec, params, REGISTRY)
    cls = REGISTRY.get(spec)
    if cls is None:
        raise StrategyError(
            f"unknown strategy {spec!r} (valid: {', '.join(strategy_names())})"
            f"{did_you_mean(spec, strategy_names())}", listed=Listed.STRATEGIES)
    return cls(**params)
