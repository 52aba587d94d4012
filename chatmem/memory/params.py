"""A strategy's parameters: declared once, parsed from text or config values, checked."""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from chatmem.config.options import shown_value
from chatmem.errors import StrategyError, UndeclaredParam
from chatmem.text import FULL_WIDTH

MAX_WHOLE_NUMBER = 10**9
"""No count or budget is larger; SQLite cannot even bind a number past 2**63."""
MAX_NUMBER = 10**9
"""No share, weight or duration is larger: 1e308 is finite, but a weight that large
overflows to inf once scores are added (and inf / inf is nan)."""


def format_params(params: Mapping[str, Any]) -> str:
    """`k=3 max_tokens=600`: parameters as a user would type them."""
    return " ".join(f"{k}={v}" for k, v in params.items())


def budget_params(params: Mapping[str, Any], budget: int) -> tuple[str, ...]:
    """The parameters that set a context budget of `budget`, the ones to raise it with:
    `max_tokens` (a combination's `summary-buffer.max_tokens`); none when the budget is the
    context_budget setting (window, buffer)."""
    return tuple(name for name, value in params.items()
                 if name.rpartition(".")[2] == "max_tokens" and value == budget)


def strategy_label(name: str, params: Mapping[str, Any]) -> str:
    """`window k=2`: a strategy and its parameters as a user would type them."""
    return f"{name} {format_params(params)}".strip()


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()

    def range_text(self) -> str:
        """What values it takes, as a person reads them: `a whole number, 1 or more`."""
        if self.choices:
            return "one of " + ", ".join(self.choices)
        kind = _type_word(self.type)
        if self.minimum is not None and self.maximum is not None:
            return f"{kind} from {_number(self.minimum)} to {_number(self.maximum)}"
        if self.minimum is not None:
            return f"{kind}, {_number(self.minimum)} or more"
        if self.maximum is not None:
            return f"{kind}, {_number(self.maximum)} or less"
        return kind

    def parse(self, strategy: str, raw: Any) -> Any:
        def invalid(must: str) -> StrategyError:
            return StrategyError(
                f"parameter {self.name}={shown_value(raw)} of strategy {strategy!r} must be {must}"
            )

        value = raw
        if isinstance(raw, str) and self.type is not str:
            try:
                value = _parse_scalar(self.type, raw)
            except ValueError:
                raise invalid(_type_word(self.type)) from None
        elif self.type is float and isinstance(raw, int) and not isinstance(raw, bool):
            value = float(raw)
        elif not isinstance(raw, self.type) or (self.type is int and isinstance(raw, bool)):
            raise invalid(_type_word(self.type))
        if self.choices and value not in self.choices:
            raise invalid(f"one of {', '.join(self.choices)}")
        if self.type is float and not math.isfinite(value):
            # nan compares false with every bound and would be stored, breaking the session.
            raise invalid("a finite number")
        if self.minimum is not None and value < self.minimum:
            raise invalid(f"at least {self.minimum}")
        maximum = self.maximum
        if maximum is None and self.type in (int, float):
            maximum = MAX_WHOLE_NUMBER if self.type is int else MAX_NUMBER
        if maximum is not None and value > maximum:
            raise invalid(f"at most {maximum}")
        return value


@dataclass(frozen=True)
class NoParams:
    """The parameters of a strategy that takes none."""


def param(default: Any, help: str, *, minimum: float | None = None,
          maximum: float | None = None, choices: tuple[str, ...] = ()) -> Any:
    """A field of a strategy's parameters dataclass: its default, meaning and range.

    The dataclass is the one declaration: `declared_params` reads the `Param`s from it,
    and a strategy's parsed values arrive as one frozen instance of it.
    """
    return field(default=default, metadata={"param": (help, minimum, maximum, choices)})


def declared_params(options: type) -> tuple[Param, ...]:
    """The `Param`s a parameters dataclass declares, in field order."""
    types = typing.get_type_hints(options)
    declared = []
    for f in fields(options):
        if f.default is MISSING or "param" not in f.metadata:
            raise UndeclaredParam(f"{options.__name__}.{f.name} is not declared with "
                                  f"param(default, help)")
        help, minimum, maximum, choices = f.metadata["param"]
        declared.append(Param(f.name, types[f.name], f.default, help, minimum, maximum,
                              choices))
    return tuple(declared)


def _parse_scalar(kind: type, raw: str) -> Any:
    raw = raw.translate(FULL_WIDTH)  # ０．５ and ｔｒｕｅ, as an input method types them
    if kind is bool:
        lowered = raw.strip().lower()
        if lowered in ("true", "yes", "on", "1"):
            return True
        if lowered in ("false", "no", "off", "0"):
            return False
        raise ValueError(raw)
    return kind(raw.strip())


def _number(value: float) -> str:
    return f"{value:g}"


def _type_word(kind: type) -> str:
    return {int: "a whole number", float: "a number", bool: "true or false",
            str: "text"}.get(kind, kind.__name__)


