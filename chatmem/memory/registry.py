"""Strategy classes by name: what `-s NAME` can name, and what builds a strategy from a spec.

Filled by chatmem.plugins (the built-in strategies through the same hook as a plugin's)
and passed down to whoever parses or builds strategies: memory never imports the plugins.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from chatmem.config.options import key_shaped, shown_value
from chatmem.config.pairs import split_names
from chatmem.errors import Listed, StrategyError, StrategyFailed
from chatmem.memory.base import BaseStrategy, Strategy
from chatmem.memory.combined import CombinedStrategy
from chatmem.memory.guards import label_output, masking
from chatmem.memory.params import format_params
from chatmem.memory.spec import SpecPart, StrategySpec, split_text
from chatmem.names import did_you_mean
from chatmem.plugin_calls import guarded

EXAMPLE_COMBINATIONS: tuple[str, ...] = ("window+entity", "summary-buffer+retrieval")
"""Combinations shown in help and covered by the contract test (when their parts are
registered)."""

VALID_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
"""A strategy's name: what `-s` takes and `+` joins, so no `+`, `:`, `.`, `,` or space."""


class StrategyRegistry(Mapping[str, type[BaseStrategy]]):
    """Registered strategy classes, in the order they were registered."""

    def __init__(self) -> None:
        self._classes: dict[str, type[BaseStrategy]] = {}
        self._labels: dict[str, str] = {}

    def check(self, cls: Any) -> None:
        """Raise TypeError or ValueError, saying why, unless `add(cls)` would take `cls`: a
        BaseStrategy subclass with a valid, free name and a description, which builds with
        its defaults."""
        if not (isinstance(cls, type) and issubclass(cls, BaseStrategy)):
            raise TypeError(f"{cls!r} is not a subclass of chatmem.memory.base.BaseStrategy")
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not VALID_NAME.fullmatch(name):
            raise ValueError(f"{cls.__name__}.name must be lowercase letters, digits, '-' or "
                             f"'_', starting with a letter or digit (got {name!r})")
        if not isinstance(getattr(cls, "description", None), str):
            raise TypeError(f"{cls.__name__}.description must be a string")
        if name in self._classes:
            taken = self._classes[name]
            raise ValueError(f"strategy {name!r} is already registered "
                             f"({taken.__module__}.{taken.__qualname__})")
        try:
            cls()
        except Exception as e:  # a plugin's class may raise anything
            raise TypeError(f"{cls.__name__}() fails with its default parameters: "
                            f"{type(e).__name__}: {e}") from None
        for declared in cls.PARAMS:
            # A default its own rule refuses would make every session started with it fail
            # to open again (its stored parameters are checked then).
            if declared.type not in (int, float, bool, str):
                # `int | None` and Optional[int] have no __name__: their text says what they are.
                named = getattr(declared.type, "__name__", None)
                kind = f"a {named}" if named else str(declared.type)
                raise TypeError(f"strategy {name!r}: parameter {declared.name} is "
                                f"{kind}; parameters are int, float, bool or str (not None: "
                                "a default such as 0 can mean none)")
            try:
                declared.parse(name, declared.default)
            except StrategyError as e:
                raise ValueError(f"default {e}") from None

    def add(self, *classes: type[BaseStrategy], label: str | None = None) -> None:
        """Register each class under its `name`, all or none: each is checked once (see
        `check` for what is refused; two of one name are refused too), then all are added.
        `label`: what opens each line a strategy of them prints as it builds or updates (the
        plugin registry's `plugin NAME (DIST VERSION): `; None for chatmem's own)."""
        names: set[str] = set()
        for cls in classes:
            self.check(cls)
            if cls.name in names:
                raise ValueError(f"strategy {cls.name!r} is registered twice")
            names.add(cls.name)
        for cls in classes:
            self._classes[cls.name] = cls
            if label is not None:
                self._labels[cls.name] = label

    def withdraw(self, name: str) -> None:
        """Take `name` out again (a plugin found to share a name with a later one)."""
        self._classes.pop(name, None)
        self._labels.pop(name, None)

    def __getitem__(self, name: str) -> type[BaseStrategy]:
        return self._classes[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._classes)

    def __len__(self) -> int:
        return len(self._classes)

    def names(self) -> list[str]:
        return list(self._classes)

    def default_eval(self) -> list[str]:
        """What `eval` compares when no --strategy is given: those marked `in_default_eval`."""
        return [name for name, cls in self._classes.items() if cls.in_default_eval]

    def contract_names(self) -> list[str]:
        """Every registered strategy plus the example combinations whose parts are registered:
        what the contract test covers."""
        combined = [c for c in EXAMPLE_COMBINATIONS if all(p in self for p in split_text(c)[0])]
        return [*self._classes, *combined]

    # -- specs -----------------------------------------------------------------------

    def parse(self, text: str, params: Mapping[str, Any] | None = None) -> StrategySpec:
        """The spec `text` names (`window`, `window+entity`, `window:k=2`), with `params`
        (`--param`, a config table, a stored session's) for the keys the text leaves out.

        A parameter is addressed as `part.key` in a combination, or by its bare name when
        exactly one part has it. Names and parameter names are checked here; values when
        the strategy is built (`create`), which the CLI does at once to say what is wrong.
        """
        names, inline = split_text(text)
        try:
            spec = self._distribute(names, {**(params or {}), **inline})
            self.create(spec)  # check the values now, before any work is done
        except StrategyError:
            self._joined_after_params(text, names, inline)
            raise
        return spec

    def _joined_after_params(self, text: str, names: tuple[str, ...],
                             inline: Mapping[str, str]) -> None:
        """`-s jiyi:k=1+window` read `1+window` as k's value and said it was no whole number:
        a combination's parameters follow all its parts. Raises the line with the way on
        when a parameter's value goes on with `+` and strategies' names."""
        if len(names) != 1 or names[0] not in self._classes:
            return
        for key, value in inline.items():
            head, *rest = split_names(value)
            later = [split_text(piece) for piece in rest]
            if not later or not all(len(n) == 1 and n[0] in self._classes for n, _ in later):
                continue
            parts = [*names, *(n[0] for n, _ in later)]
            given = [f"{names[0]}.{k}={head if k == key else v}" for k, v in inline.items()]
            given += [f"{n[0]}.{k}={v}" for n, pairs in later for k, v in pairs.items()]
            way = f"{'+'.join(parts)}:{','.join(given)}"
            raise StrategyError(f"strategy {text!r}: a combination's parameters follow all its "
                                f"parts, each as PART.NAME: {way}")

    def _distribute(self, names: tuple[str, ...], given: Mapping[str, Any]) -> StrategySpec:
        combined = len(names) > 1
        joined = "+".join(names)
        for name in names:
            if name not in self._classes:
                valid = ", ".join(self._classes)
                if not combined:
                    raise StrategyError(f"unknown strategy {shown_value(name)} (valid: {valid})"
                                        f"{did_you_mean(name, self._classes)}",
                                        listed=Listed.STRATEGIES)
                # A key pasted as one part is not repeated in the combination either.
                said = "+".join("(a key)" if key_shaped(n) else n for n in names)
                part = shown_value(name) if name else "'(empty)'"
                raise StrategyError(f"unknown strategy {part} in {said!r} "
                                    f"(valid parts: {valid}){did_you_mean(name, self._classes)}",
                                    listed=Listed.STRATEGIES)
        if len(set(names)) != len(names):
            raise StrategyError(f"{joined!r} names the same strategy twice")
        if not combined:
            return StrategySpec.single(names[0], given)
        split: dict[str, dict[str, Any]] = {name: {} for name in names}
        for key, value in given.items():
            owner, dot, sub = key.partition(".")
            if dot:
                if owner not in split:
                    raise StrategyError(
                        f"parameter {key!r}: {owner!r} is not part of {joined!r} "
                        f"(parts: {', '.join(names)})")
                split[owner][sub] = value
                continue
            owners = [n for n in names if any(p.name == key for p in self._classes[n].PARAMS)]
            if len(owners) != 1:
                choices = [f"{n}.{p.name}" for n in names for p in self._classes[n].PARAMS]
                valid = f"valid: {', '.join(choices) or 'none'}"
                if key.replace(":", ".", 1) in choices:  # `--param jiyi:k=2`
                    valid = f"here: {key.replace(':', '.', 1)}={value}"
                hint = "is ambiguous" if owners else "is unknown"
                raise StrategyError(
                    f"parameter {key!r} {hint} for {joined!r}; address it as "
                    f"PART.NAME ({valid})")
            split[owners[0]][key] = value
        return StrategySpec(tuple(SpecPart(name, split[name]) for name in names))

    def create(self, spec: StrategySpec) -> Strategy:
        """The strategy `spec` names, its parameters parsed and checked."""
        members = []
        for part in spec.parts:
            cls = self._classes.get(part.name)
            if cls is None:
                raise StrategyError(f"unknown strategy {shown_value(part.name)} "
                                    f"(valid: {', '.join(self._classes)})"
                                    f"{did_you_mean(part.name, self._classes)}",
                                    listed=Listed.STRATEGIES)
            members.append(label_output(_built(cls, part), self._labels.get(part.name)))
        return CombinedStrategy(members) if len(members) > 1 else members[0]

    def strategy(self, text: str, params: Mapping[str, Any] | None = None) -> Strategy:
        """The strategy `text` and `params` name (as `parse` reads them), built once."""
        names, inline = split_text(text)
        try:
            return self.create(self._distribute(names, {**(params or {}), **inline}))
        except StrategyError:
            self._joined_after_params(text, names, inline)
            raise

    def changed_params(self, name: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """A stored strategy's parameters that differ from their defaults, as listings show
        them; all of them when the strategy no longer builds (a plugin since removed, or one
        that now fails on them): a listing shows every session whatever its plugin does."""
        try:
            return self.strategy(name, params).changed_params()
        except (StrategyError, StrategyFailed):
            return dict(params)


def _built(cls: type[BaseStrategy], part: SpecPart) -> BaseStrategy:
    """`cls(**part.params)`: a plugin's __init__ may refuse the user's parameters with any
    exception (its own checks, a bug), which is then one line naming it, not a traceback,
    masked of the secrets the environment holds (no settings are at hand here)."""
    with_params = f" with {format_params(part.params)}" if part.params else ""
    return guarded(lambda e: StrategyFailed(part.name, e, f"could not start{with_params}"),
                   lambda: cls(**part.params), masking(dict))
