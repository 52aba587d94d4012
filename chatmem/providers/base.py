"""The chat model behind one small protocol: stream a reply, report usage, count tokens."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from chatmem.images import ImageRule
from chatmem.notices import UsageIgnored
from chatmem.tokens import MOST_TOKENS_COUNTED, TokenCounter, token_count

ChatMessages = Sequence[Mapping[str, Any]]
"""Chat messages as sent: `content` is text, or for a message with an image OpenAI's
content parts (text, then `image_url` with a data: URL)."""


def image_rule(provider: object) -> ImageRule | None:
    """How `provider` counts an image sent to it; None: it cannot see images.

    A provider declares it as its attribute `images` (an ImageRule); one without the
    attribute sees none. Wrappers (masking, counting, recording) forward it.
    """
    rule = getattr(provider, "images", None)
    return rule if isinstance(rule, ImageRule) else None


class Purpose(StrEnum):
    """What a whole reply is asked for: offline providers answer each by its own rule,
    and fact extraction asks for JSON."""

    CHAT = "chat"
    SUMMARY = "summary"
    FACTS = "facts"


@dataclass
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cut_at_limit: bool = False
    """The reply stopped at the reply-length limit, not where the model ended it."""
    filtered: bool = False
    """The server's content filter stopped the reply (OpenAI's `content_filter`)."""
    ignored: UsageIgnored | None = None
    """Set by chatmem, not by a provider: the provider (a plugin's, or the server behind
    `openai`) reported counts that are no counts (text, a float, a negative number, 10**23),
    dropped here (both counts None)."""


def not_a_count(value: object) -> str:
    """What makes `value`, refused by tokens.token_count, no token count."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return f"more than any request or reply holds ({MOST_TOKENS_COUNTED:,})"
    return "not a count of 0 or more"


def checked_counts(usage: Usage) -> tuple[Usage, str | None]:
    """`usage` with its counts as ints (a numpy integer will do), or what is wrong with
    one of them: a count is an int from 0 to MOST_TOKENS_COUNTED, or None (not reported);
    a bool is none."""
    found: list[int | None] = []
    for field in ("prompt_tokens", "completion_tokens"):
        value = getattr(usage, field)
        whole = None if value is None else token_count(value)
        if value is not None and whole is None:
            return usage, f"its usage's {field} is {_shown(value)}, {not_a_count(value)}"
        found.append(whole)
    prompt, completion = found
    if prompt is usage.prompt_tokens and completion is usage.completion_tokens:
        return usage, None
    return dataclasses.replace(usage, prompt_tokens=prompt, completion_tokens=completion), None


def _shown(value: object) -> str:
    """A count as a notice shows it: its repr when short, else what kind of value it is."""
    if isinstance(value, int | float | str) and len(shown := repr(value)) <= 40:
        return shown
    return type(value).__name__


class ReplyStream(Protocol):
    """Iterate for text deltas; afterwards `usage` and `rendered_prompt` are set. An empty
    piece is no text: it says the model's server took the request and is answering (a
    reasoning model thinks before its first word), so a server front end can send its
    client the response's headers without waiting for that word (Engine.run_turn's
    `on_answering`)."""

    usage: Usage
    rendered_prompt: str | None

    def __iter__(self) -> Iterator[str]: ...

    def close(self) -> None: ...


class Provider(Protocol):
    name: str
    model: str

    def stream(self, messages: ChatMessages) -> ReplyStream: ...

    def complete(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> str:
        """A whole reply at once, for summaries and fact extraction.

        `purpose` lets offline providers answer each kind of request by its own
        deterministic rule.
        """
        ...

    def token_counter(self) -> TokenCounter: ...

    def close(self) -> None: ...


@runtime_checkable
class ProviderWrapper(Protocol):
    """A provider that passes its calls on to another (counting, masking, guarding a
    plugin's, opening on first use): what answers is the one it wraps."""

    def wrapped_provider(self) -> Provider:
        """The provider the calls go to; a lazily opened one is opened."""
        ...


_WRAPPERS_AT_MOST = 16
"""Wrappers followed before giving up: one that wraps itself must not hang a turn."""


def innermost(provider: Provider) -> Provider:
    """The provider at the end of the wrappers around `provider`: the model that answers."""
    for _ in range(_WRAPPERS_AT_MOST):
        if not isinstance(provider, ProviderWrapper):
            break
        provider = provider.wrapped_provider()
    return provider
