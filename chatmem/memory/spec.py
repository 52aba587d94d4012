"""A strategy as the user names it: one part (`window`) or several (`window+entity`), each
with its own parameters.

Parsed once by the registry (chatmem.memory.registry, which knows each part's parameters)
from what the user gave: `-s window+entity:window.k=2`, `--param k=3`, `/strategy`, a
config table, a template, or a stored session's name and parameters. From there it is
passed around as this value; nothing splits `A+B` or `:k=2` again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chatmem.config.options import shown_value
from chatmem.config.pairs import split_names, split_params
from chatmem.errors import StrategyError
from chatmem.memory.params import strategy_label

if TYPE_CHECKING:
    from chatmem.memory.base import Strategy

JOIN = "+"
"""Between the parts of a combination: `window+entity`."""


@dataclass(frozen=True)
class SpecPart:
    """One strategy of a spec and the raw parameters given for it, by its own names (`k`)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StrategySpec:
    """A strategy to build: its parts in order, each with its parameters."""

    parts: tuple[SpecPart, ...]

    @classmethod
    def single(cls, name: str, params: Mapping[str, Any] | None = None) -> StrategySpec:
        return cls((SpecPart(name, dict(params or {})),))

    @classmethod
    def of(cls, strategy: Strategy, *, changed_only: bool = False) -> StrategySpec:
        """The spec a built strategy answers to; `changed_only`: only the parameters that
        differ from their defaults."""
        return cls(tuple(
            SpecPart(m.name, m.changed_params() if changed_only else dict(m.params))
            for m in strategy.members))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parts)

    @property
    def name(self) -> str:
        """`window+entity`: as stored with a session and shown."""
        return JOIN.join(self.names)

    @property
    def combined(self) -> bool:
        return len(self.parts) > 1

    @property
    def params(self) -> dict[str, Any]:
        """The parameters as stored and shown: `k` alone, `window.k` in a combination."""
        if not self.combined:
            return dict(self.parts[0].params) if self.parts else {}
        return {f"{p.name}.{key}": value for p in self.parts for key, value in p.params.items()}

    @property
    def label(self) -> str:
        """`window k=2`: as a user would type it."""
        return strategy_label(self.name, self.params)

    @property
    def slug(self) -> str:
        """The label as a session name's suffix: `window-k-2`."""
        return re.sub(r"[^\w+.]+", "-", self.label).strip("-")

    def part(self, name: str) -> SpecPart | None:
        return next((p for p in self.parts if p.name == name), None)

    def keeping(self, earlier: StrategySpec) -> StrategySpec:
        """This spec with the parameters `earlier` gave a part of the same name that this
        one leaves out: a switch from `summary-buffer max_tokens=200` to
        `summary-buffer+entity` keeps `summary-buffer.max_tokens=200`; a value given with
        the switch wins."""
        return StrategySpec(tuple(
            SpecPart(p.name, {**(old.params if (old := earlier.part(p.name)) else {}),
                              **p.params})
            for p in self.parts))


def split_text(text: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """`window+entity:window.k=2,k=3` → (("window", "entity"), {"window.k": "2", "k": "3"}):
    the names as typed and the parameters given after the colon, not yet checked."""
    name, params = split_params(text, lambda _: StrategyError(
        f"strategy {shown_value(text)}: parameters must be key=value, e.g. window:k=2"))
    return split_names(name), params
