"""What may come next in a strategy spec being typed (`win`, `window+`, `window:k=`,
`window:k=3`), with a line of help each: shell completion of --strategy and the REPL's
/strategy both draw on it.

Pure over the strategy registry, handed in by the caller (the registry lives above).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from chatmem.config.pairs import PARAMS_AFTER
from chatmem.memory.base import BaseStrategy
from chatmem.memory.spec import JOIN, StrategySpec, split_text

if TYPE_CHECKING:
    from chatmem.memory.params import Param

Candidates = list[tuple[str, str]]
"""(what to complete to, one line of help)."""


def spec_candidates(word: str, registry: Mapping[str, type[BaseStrategy]],
                    in_use: StrategySpec | None = None) -> Candidates:
    """The completions of `word` as --strategy takes it: a name, `A+B`, after a colon the
    parameters of the strategy named (`window:k=`), those not given yet after a comma, and
    after `=` the values the parameter takes (`value_candidates`; `in_use`: the strategy a
    session runs, whose values are offered first)."""
    if PARAMS_AFTER in word:
        name, _, pairs = word.partition(PARAMS_AFTER)
        done, comma, pair = pairs.rpartition(",")
        prefix = f"{name}{PARAMS_AFTER}{done}{comma}"
        if "=" in pair:
            found = value_candidates(name, pair, registry, in_use, prefix=prefix)
        else:
            given = ({given.partition("=")[0].strip() for given in done.split(",")}
                     if comma else set())
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


def value_candidates(spec: str, pair: str, registry: Mapping[str, type[BaseStrategy]],
                     in_use: StrategySpec | None = None, *, prefix: str = "") -> Candidates:
    """`k=5`-style candidates for the `KEY=` being typed in `pair`: the values the parameter
    takes (its choices, true and false) or, for a number, its default and the value in use
    (when `in_use` is the strategy `spec` names)."""
    key = pair.partition("=")[0].strip()
    found = _param(registry, spec, key)
    if found is None:
        return []
    current = in_use.params.get(key) if in_use is not None and in_use.name == spec else None
    if found.choices:
        values = list(found.choices)
    elif found.type is bool:
        values = ["true", "false"]
    else:
        values = [str(found.default)]
        if current is not None and str(current) not in values:
            values.insert(0, str(current))

    def meta(value: str) -> str:
        notes = ", ".join(note for note, holds in (
            ("in use", value == str(current)), ("default", value == str(found.default)))
            if holds)
        if found.choices:
            return notes or found.help
        return f"{notes or found.help}; {found.range_text()}"

    return [(f"{prefix}{key}={value}", meta(value)) for value in values]


def _param(registry: Mapping[str, type[BaseStrategy]], spec: str, key: str) -> Param | None:
    """The parameter `key` (`k`, or `window.k` in a combination) of the strategy `spec`."""
    parts = split_text(spec)[0]
    if not all(part in registry for part in parts):
        return None
    part, dot, name = key.rpartition(".")
    for candidate in ([part] if dot else parts):
        if candidate in parts:
            match = [p for p in registry[candidate].PARAMS if p.name == name]
            if match:
                return match[0]
    return None
