"""Memory strategies: the protocol (base.py), one module per strategy, and the registry type.

Strategies are registered by name in a `StrategyRegistry` (registry.py) that
chatmem.plugins fills, the built-in ones through the same hook as a plugin's;
`registry.parse("window+entity:window.k=3")` gives a `StrategySpec` (spec.py) and
`registry.create(spec)` the strategy. Memory never imports the plugins: whoever builds
strategies is handed the registry.
"""

from __future__ import annotations

from chatmem.memory.registry import EXAMPLE_COMBINATIONS, StrategyRegistry
from chatmem.memory.spec import SpecPart, StrategySpec

__all__ = ["EXAMPLE_COMBINATIONS", "SpecPart", "StrategyRegistry", "StrategySpec"]
