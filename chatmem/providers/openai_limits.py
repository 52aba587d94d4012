"""What an OpenAI-compatible server's reply may be: the field its cap is sent in, how much
text and how many bytes of body a capped reply can take, and how one with no text ended."""

from __future__ import annotations

from chatmem.errors import ProviderResponseError

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
