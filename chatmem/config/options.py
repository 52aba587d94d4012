"""Per-call model options (`-o temperature 0.2`) and money cost from a configured price.

Both are typed values: the CLI parses options once, providers send them, render/ shows
a Cost. No price is built in: a price is whatever the user's config says it is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from chatmem.errors import UsageError

OptionValue = Any
"""A model option's value: a checked number for the options chatmem knows, else any JSON
value, sent to the endpoint as it is."""


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
    "frequency_penalty": OptionRule(float, -2.0, 2.0, "penalty on often-repeated tokens"),
    "presence_penalty": OptionRule(float, -2.0, 2.0, "penalty on any repeated token"),
    "top_k": OptionRule(int, 0, 10**6, "sample from the k likeliest tokens"),
    "min_p": OptionRule(float, 0.0, 1.0, "least probability a sampled token keeps"),
}
"""The options chatmem knows and checks; any other key (`-o repeat_penalty 1.1`) is sent to
the endpoint as a field of the request body, as it is."""
RESERVED = {
    "model": "use -m/--model",
    "messages": "the strategy builds them",
    "stream": "chatmem always streams",
    "stream_options": "chatmem asks for usage itself",
    "max_tokens": "use -o max_reply_tokens",
    "max_completion_tokens": "use -o max_reply_tokens",
    "n": "chatmem reads one reply",
}
"""Request fields chatmem sets itself: an option may not override them."""
TOOL_FIELDS = ("tools", "tool_choice", "functions", "function_call", "parallel_tool_calls")
"""Request fields asking for tool calls: a reply of tool calls is no text to show, store or
send again, and chatmem runs no tool (serve refuses them in a request too)."""
SETTINGS = ("max_reply_tokens",)
"""Options that are chatmem settings, not request fields."""
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_option(key: str, value: Any, label: str | None = None) -> OptionValue:
    """`value` as the option's type, or UsageError naming the key, the value and the range.

    A key chatmem does not know passes through to the endpoint: a string from the command
    line is read as JSON when it is (`3`, `true`, `["\\n"]`), else kept as text.
    """
    where = label or f"-o {key}"
    rule = OPTION_RULES.get(key)
    if rule is None:
        return _pass_through(key, value, where)
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
        raise UsageError(f"{where} must be {kind}, got {shown_value(value)}") from None
    if (isinstance(number, float) and not math.isfinite(number)) or (
            rule.low is not None and number < rule.low) or (
            rule.high is not None and number > rule.high):
        raise UsageError(f"{where} must be between {rule.low:g} and {rule.high:g}, "
                         f"got {shown_value(value)}")
    return number


SAID_CHARS = 40
"""Most characters of a refused value an error shows: a served request's top_k of 300
digits (or a 5,000-character string) was echoed whole."""


def shown_value(value: Any) -> str:
    """`value` as a message shows it, cut past SAID_CHARS (a 300-digit number was echoed
    whole); a string that reads as a key (`key_shaped`) only as its length."""
    if isinstance(value, str) and key_shaped(value):
        return f"a string of {len(value)} characters (not repeated: it reads as a key)"
    said = repr(keys_hidden(value) if isinstance(value, str) else value)
    return said if len(said) <= SAID_CHARS else f"{said[:SAID_CHARS - 1]}…"


_KEY_RUN = re.compile(r"[A-Za-z0-9_\-]{20,}")
_WORD = re.compile(r"[A-Za-z0-9_\-]+")


def keys_hidden(text: str) -> str:
    """`text` with each word that reads as a key (`key_shaped`) said as `(a key of N
    characters)`: a key pasted as a part (`window:KEY`, `KEY=3`, `window+KEY`) was repeated."""
    return _WORD.sub(lambda m: f"(a key of {len(m[0])} characters)" if key_shaped(m[0])
                     else m[0], text)


def key_shaped(value: str) -> bool:
    """Whether `value` reads as an API key or a token pasted in the wrong place (`provider =
    "sk-proj-…"`, `timeout = "gsk_…"` were repeated whole in the error): one word of 20
    characters or more, of letters and digits (`-` and `_` too), with upper and lower case
    and a digit, or 32 or more of them (a hex key). A model name (`claude-3-5-sonnet-20241022`,
    `Qwen2.5-7B-Instruct`, with dots) or a word is shown as written."""
    if not _KEY_RUN.fullmatch(value):
        return False
    cases = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return (cases and any(c.isdigit() for c in value)) or (
        len(value) >= 32 and any(c.isdigit() for c in value))


def _pass_through(key: str, value: Any, where: str) -> OptionValue:
    if key in RESERVED:
        raise UsageError(f"{where}: chatmem sets {key} itself ({RESERVED[key]})")
    if key in TOOL_FIELDS:
        raise UsageError(f"{where}: tool calls are not taken as chatmem turns; send them to "
                         "the model directly")
    if not _FIELD.fullmatch(key):
        raise UsageError(f"{where}: not an option name (letters, digits and _; known: "
                         f"{', '.join(OPTION_RULES)}; any other is sent to the endpoint)")
    if not isinstance(value, str):
        return value  # a config table's value is typed already
    import json

    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    if isinstance(parsed, float) and not math.isfinite(parsed):
        raise UsageError(f"{where} must be a finite number, got {value!r}")
    return parsed


def parse_options(pairs: Iterable[str] | None) -> dict[str, OptionValue]:
    """`["temperature=0.2", "seed=7"]` → {"temperature": 0.2, "seed": 7}, each checked."""
    options: dict[str, OptionValue] = {}
    for pair in pairs or ():
        key, sign, value = pair.partition("=")
        key = key.strip()
        if not sign or not key:
            raise UsageError(f"-o {pair!r} must be KEY=VALUE or KEY VALUE, e.g. "
                             "-o temperature 0.2")
        options[key] = check_option(key, value.strip())
    return options


def check_options(table: Mapping[str, Any], where: str) -> dict[str, OptionValue]:
    """A config table of options (a template's), checked like `-o`; `where` names the table."""
    return {key: check_option(key, value, f"{where}.{key}") for key, value in table.items()}


def sampling(options: Mapping[str, OptionValue]) -> dict[str, OptionValue]:
    """The options that go into the request body as they are: all but chatmem's settings."""
    return {key: value for key, value in options.items() if key not in SETTINGS}


class ReplyCapped(Protocol):
    """What chat_reply_cap reads of Settings (named so, settings.py imports this module:
    shown_value for a refused timezone)."""

    @property
    def options(self) -> Mapping[str, Any]: ...

    @property
    def max_reply_tokens(self) -> int | None: ...


def chat_reply_cap(settings: ReplyCapped) -> int | None:
    """The longest chat reply in tokens: an option's (`-o max_reply_tokens`, a template's, a
    served request's max_tokens) over the configured max_reply_tokens. Options shape the
    chat's replies only: a summary or a fact extraction is capped by the configured one."""
    cap = settings.options.get("max_reply_tokens")
    return settings.max_reply_tokens if cap is None else int(cap)


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
        # $1 + €1 is no amount in either currency: a total keeps one Cost per currency.
        if other.currency != self.currency:
            raise ValueError(f"cannot add {other.currency} to {self.currency}")
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
    costs: tuple[Cost, ...] = ()
    """One total per currency, in the order the currencies were first spent."""
    unpriced: bool = False
    """Some tokens went to a model without a configured price: the cost is a lower bound."""

    def plus(self, prompt: int, reply: int, price: Price | None) -> Spent:
        if price is None:
            return Spent(self.tokens + prompt + reply, self.costs, self.unpriced or bool(
                prompt + reply))
        cost = price.cost(prompt, reply)
        currencies = [c.currency for c in self.costs]
        if cost.currency in currencies:
            at = currencies.index(cost.currency)
            costs = (*self.costs[:at], self.costs[at] + cost, *self.costs[at + 1:])
        else:
            costs = (*self.costs, cost)
        return Spent(self.tokens + prompt + reply, costs, self.unpriced)
