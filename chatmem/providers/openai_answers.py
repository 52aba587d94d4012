"""How the `openai` provider reads what is not a streamed reply's text: a delta of the
model's reasoning, and the one JSON document a server answers with in place of a stream."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chatmem.errors import ProviderResponseError


def thinking(delta: Any) -> bool:
    """Whether a delta carries the model's reasoning, which servers stream apart from the
    reply (`reasoning_content`: vLLM, llama.cpp's server, DeepSeek; `reasoning`: Ollama,
    OpenRouter). It is not the reply (neither shown, stored nor sent again), but it is the
    server answering: a model thinking longer than idle_timeout was stopped as stalled."""
    extra = getattr(delta, "model_extra", None) or {}
    return any(isinstance(extra.get(name), str) and extra[name]
               for name in ("reasoning_content", "reasoning"))


@dataclass(frozen=True)
class WholeAnswer:
    """A chat completion answered as one JSON document: its reply's text (uncut), why it
    ended, and the server's usage as it sent it."""

    text: str
    finish_reason: Any
    usage: Any


def whole_answer(response: Any, kind: str, *, where: str, most: int,
                 close: Callable[[], None]) -> WholeAnswer:
    """The answer of a server (`where`) that sent one JSON document (of content type `kind`)
    instead of a stream; `close`d, and refused, past `most` bytes."""
    if "json" not in kind:
        what = "an HTML page" if "html" in kind else f"{kind or 'an unlabelled body'}"
        raise ProviderResponseError(
            f"{where} answered with {what}, not an OpenAI-compatible reply:"
            " check base_url (it usually ends in /v1)")
    # Read no further than the most a reply within the cap can be (the streamed body's
    # bound: logprobs make a JSON answer as large per token): a body without end (or of
    # gigabytes) must not fill memory first.
    parts: list[bytes] = []
    size = 0
    for part in response.iter_bytes():
        parts.append(part)
        size += len(part)
        if size > most:
            close()
            raise ProviderResponseError(f"{where} sent a reply of more than {most:,}"
                                        " bytes; no more are read")
    body = b"".join(parts)
    try:
        data = json.loads(body)
        choice = data["choices"][0]
        text = choice["message"]["content"] or choice["message"].get("refusal") or ""
        usage = data.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise ProviderResponseError(
            f"{where} answered with JSON that is not a chat completion") from None
    if not isinstance(text, str):
        raise ProviderResponseError(f"{where} sent a reply that is not text")
    return WholeAnswer(text, choice.get("finish_reason"), usage)
