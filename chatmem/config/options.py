"""Per-call model options (`-o temperature=0.2`) and money cost from a configured price.

Both are typed values: the CLI parses options once, providers send them, render/ shows
a Cost. No price is built in: a price is whatever the user's config says it is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chatmem.errors import UsageError


@dataclass(frozen=True)
class OptionRule:
    kind: type
    low: float | None
    high: float | None
    meaning: str


OPTION_RULES: dict[str, OptionRule] = {
    "temperature": OptionRule(float, 0.0, 2.0, "sampling temperature"),
    "top_p": OptionRule(float, 0.0, 1.0, "nucleus sampling mass"),
    "seed": OptionRule(int, 0, 2**63 - 1, "sampling seed, for repeatable replies"),
    "max_reply_tokens": OptionRule(int, 1, 10**7, "longest reply in tokens"),
}
"""Every option `-o KEY=VALUE` accepts; an unknown key is an error, never ignored."""
SAMPLING = ("temperature", "top_p", "seed")
"""The options sent in the request body as they are named."""


def check_option(key: str, value: Any, label: str | None = None) -> float | int:
    """`value` as the option's type, or UsageError naming the key, the value and the range."""
    where = label or f"-o {key}"
    rule = OPTION_RULES.get(key)
    if rule is None:
        raise UsageError(f"{where}: unknown option (known: {', '.join(OPTION_RULES)})")
    number: float | int
    try:
        if isinstance(value, bool):
            raise ValueError
        if rule.kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            number = int(value)
        else:
            number = float(value)
    except (TypeError, ValueError):
        kind = "a whole number" if rule.kind is int else "a number"
        raise UsageError(f"{where} must be {kind}, got {value!r}") from None
    if (isinstance(number, float) and not math.isfinite(number)) or (
            rule.low is not None and number < rule.low) or (
            rule.high is not None and number > rule.high):
        raise UsageError(f"{where} must be between {rule.low:g} and {rule.high:g}, "
                         f"got {value!r}")
    return number


def parse_options(pairs: Iterable[str] | None) -> dict[str, float | int]:
    """`["temperature=0.2", "seed=7"]` → {"temperature": 0.2, "seed": 7}, each checked."""
    options: dict[str, float | int] = {}
    for pair in pairs or ():
        key, sign, value = pair.partition("=")
        key = key.strip()
        if not sign or not key:
            raise UsageError(f"-o {pair!r} must be KEY=VALUE, e.g. -o temperature=0.2")
        options[key] = check_option(key, value.strip())
    return options


def check_options(table: Mapping[str, Any], where: str) -> dict[str, float | int]:
    """A config table of options (a template's), checked like `-o`; `where` names the table."""
    return {key: check_option(key, value, f"{where}.{key}") for key, value in table.items()}


def sampling(options: Mapping[str, float | int]) -> dict[str, float | int]:
    """The options that go into the request body as they are."""
    return {key: options[key] for key in SAMPLING if key in options}


@dataclass(frozen=True)
class Price:
    """What a model costs per million tokens, as the user's config says."""

    input: float
    output: float
    currency: str = "$"

    def cost(self, prompt_tokens: int | None, reply_tokens: int | None) -> Cost:
        amount = ((prompt_tokens or 0) * self.input + (reply_tokens or 0) * self.output) / 1e6
        return Cost(amount, self.currency)


@dataclass(frozen=True)
class Cost:
    amount: float
    currency: str = "$"

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.amount + other.amount, self.currency)


def price_of(prices: Mapping[str, Mapping[str, Any]], model: str | None) -> Price | None:
    """The configured price of `model` ([prices."MODEL"]), None when none is configured."""
    table = prices.get(model or "")
    if table is None:
        return None
    return Price(float(table["input"]), float(table["output"]), str(table.get("currency", "$")))


@dataclass(frozen=True)
class Spent:
    """A running total: tokens sent and received, and their cost when every model is priced."""

    tokens: int = 0
    cost: Cost | None = None
    unpriced: bool = False
    """Some tokens went to a model without a configured price: the cost is a lower bound."""

    def plus(self, prompt: int, reply: int, price: Price | None) -> Spent:
        if price is None:
            return Spent(self.tokens + prompt + reply, self.cost, self.unpriced or bool(
                prompt + reply))
        cost = price.cost(prompt, reply)
        return Spent(self.tokens + prompt + reply,
                     cost if self.cost is None else self.cost + cost, self.unpriced)
