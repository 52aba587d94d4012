"""What an OpenAI-compatible server's reply may be: the field its cap is sent in, how much
text and how many bytes of body a capped reply can take, and how one with no text ended."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatmem.errors import (
    ProviderError,
    ProviderQuotaExhausted,
    ProviderRateLimited,
    ProviderResponseError,
)

CHARS_PER_TOKEN_AT_MOST = 16
"""No tokenizer's tokens average more characters than this over a whole reply."""
BYTES_PER_TOKEN_AT_MOST = 4096
"""Body bytes one token of a reply may take: a server streams each token in its own event
(an envelope of ~200 bytes; with `-o logprobs`/`top_logprobs` 20 alternatives, ~2 KB), its
16 characters JSON-escaped at up to 12 bytes each. A reasoning model's thinking is capped
with the reply, so it counts too."""
BYTES_BESIDE_REPLY = 1 << 20
"""Body bytes allowed beside the tokens: the usage event, keep-alive comments, [DONE]."""


CAP_FIELDS = ("max_tokens", "max_completion_tokens")
"""The two names of the reply cap: OpenAI's reasoning models (o1, o3, o4-mini, gpt-5) refuse
max_tokens; Ollama, llamafile and llama.cpp before 2026 ignore max_completion_tokens, so a
reply sent to them under that name would run unbounded."""


def cap_field_for(base_url: str) -> str:
    """The field the reply cap is sent in: max_completion_tokens to OpenAI's own API, which
    takes it for every chat model and deprecates max_tokens; max_tokens to any other
    server, which every OpenAI-compatible one reads."""
    from urllib.parse import urlsplit

    host = (urlsplit(base_url).hostname or "").lower()
    return CAP_FIELDS[1] if host == "api.openai.com" else CAP_FIELDS[0]


def other_cap_field(error: Exception, sent: str) -> str | None:
    """The cap field a 400 asks for instead of `sent` ("Unsupported parameter: 'max_tokens'
    ... Use 'max_completion_tokens' instead."), else None: only a refusal that names both."""
    other = CAP_FIELDS[1] if sent == CAP_FIELDS[0] else CAP_FIELDS[0]
    text = str(error)
    named = getattr(error, "param", None) == sent or f"'{sent}'" in text
    return other if named and other in text else None


def no_text_error(where: str, finish_reason: object) -> ProviderResponseError:
    """The error of a reply that ended with no text: tool calls (a model or a server's chat
    template that calls tools chatmem never offered) are named, not called empty."""
    if finish_reason in ("tool_calls", "function_call"):
        return ProviderResponseError(
            f"{where} answered with tool calls (finish_reason {finish_reason}), not text:"
            " chatmem offers no tools; check the model's or the server's chat template")
    return ProviderResponseError(f"{where} sent an empty reply")


RETRIED_WAIT_AT_MOST = 120.0
"""Seconds of Retry-After the openai client still waits out and retries; past it, it gives
up at once (its MAX_RETRY_AFTER_DELAY)."""


def rate_limit_error(where: str, error: Any, retries: int) -> ProviderError:
    """What a 429 (openai.RateLimitError `error`, after up to `retries` retries) says: a used-up
    quota is no rate limit that waiting ends, and a wait past the client's is not retried."""
    body = error.body if isinstance(error.body, Mapping) else {}
    if "insufficient_quota" in (body.get("code"), body.get("type")):
        # OpenAI's answer when the account has no credit left: retried as any 429, and
        # "wait and try again" sent the user to wait for nothing.
        return ProviderQuotaExhausted(
            f"{where} answered 429 insufficient_quota: the account's quota is used up;"
            " check its plan and billing (waiting does not help)", status=429)
    wait = retry_after(error.response.headers)
    if wait is not None and wait > RETRIED_WAIT_AT_MOST:
        return ProviderRateLimited(
            f"{where} is rate limiting requests (429) and asks to wait {_span(wait)}:"
            " not retried; try again then", status=429, retry_after=wait)
    retried = " after retries" if retries else ""
    return ProviderRateLimited(
        f"{where} is rate limiting requests (429){retried}: wait and try again", status=429,
        retry_after=wait)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The seconds a response's retry-after-ms or Retry-After (seconds or an HTTP date) asks
    to wait, or None."""
    import email.utils
    import math
    import time

    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            seconds = float(headers.get(name, ""))
        except ValueError:
            continue
        if math.isfinite(seconds):
            return seconds / scale
    try:
        when = email.utils.parsedate_to_datetime(headers.get("retry-after", ""))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return when.timestamp() - time.time() if when.tzinfo is not None else None


def _span(seconds: float) -> str:
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.0f} {unit}"
    return f"{seconds:,.0f} s"
