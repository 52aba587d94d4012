"""What may come next in a strategy spec being typed (`win`, `window+`, `window:k=`), with a
line of help each: shell completion of --strategy draws on it.

Pure over the strategy registry, handed in by the caller (the registry lives above).
"""

from __future__ import annotations

from collections.abc import Mapping

from chatmem.config.pairs import PARAMS_AFTER
from chatmem.memory.base import BaseStrategy
from chatmem.memory.spec import JOIN, split_text

Candidates = list[tuple[str, str]]
"""(what to complete to, one line of help)."""


def spec_candidates(word: str, registry: Mapping[str, type[BaseStrategy]]) -> Candidates:
    """The completions of `word` as --strategy takes it: a name, `A+B`, or after a colon
    the parameters of the strategy named (`window:k=`), those not given yet after a comma."""
    if PARAMS_AFTER in word:
        name, _, pairs = word.partition(PARAMS_AFTER)
        done, comma, _ = pairs.rpartition(",")
        prefix = f"{name}{PARAMS_AFTER}{done}{comma}"
        given = {pair.partition("=")[0].strip() for pair in done.split(",")} if comma else set()
        found = [(prefix + key, help_text) for key, help_text in parameters(name, registry)
                 if key.rstrip("=") not in given]
    else:
        head, plus, _ = word.rpartition(JOIN)
        prefix = f"{head}{plus}" if plus else ""
        taken = set(split_text(head)[0]) if plus else set()
        found = [(prefix + name, cls.description) for name, cls in registry.items()
                 if name not in taken]
    return [(value, help_text) for value, help_text in found if value.startswith(word)]


def parameters(spec: str, registry: Mapping[str, type[BaseStrategy]]) -> Candidates:
    """`k=` and friends of the strategy named; `window.k=` for each part of a combination."""
    parts = split_text(spec)[0]
    if not all(part in registry for part in parts):
        return []
    combined = len(parts) > 1
    return [(f"{part}.{p.name}=" if combined else f"{p.name}=",
             f"{p.help} (default {p.default})")
            for part in parts for p in registry[part].PARAMS]
