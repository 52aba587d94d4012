"""`openai`: any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp, LM Studio).

Errors become one line that says what to check. The API key is read from the
environment variable named in config and never appears in an error, a log or
the database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chatmem.errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderNotFound,
    ProviderRateLimited,
    ProviderResponseError,
    ProviderTimeout,
)
from chatmem.providers.base import ChatMessages, Usage
from chatmem.tokens import TokenCounter, counter_for_model


class OpenAIReply:
    def __init__(
        self, provider: OpenAIProvider, messages: ChatMessages, *, json_only: bool = False
    ) -> None:
        self._provider = provider
        self._messages = messages
        self._json_only = json_only
        self._stream: Any = None
        self.usage = Usage()
        self.rendered_prompt: str | None = None

    def __iter__(self) -> Iterator[str]:
        p = self._provider
        finished = False
        cut = False
        started = False
        try:
            messages: Any = [dict(m) for m in self._messages]
            limit: dict[str, Any] = {"max_tokens": p.max_tokens} if p.max_tokens else {}
            if self._json_only:
                # Servers constrain decoding to JSON (llama.cpp with a grammar), so
                # even a small model answers a fact extraction request parseably.
                limit["response_format"] = {"type": "json_object"}
            self._stream = p.client.chat.completions.create(
                model=p.model,
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},
                **limit,
            )
            started = True
            for chunk in self._stream:
                if chunk.usage is not None:
                    self.usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
                for choice in chunk.choices or ():
                    if choice.delta is not None and choice.delta.content:
                        yield choice.delta.content
                    if choice.finish_reason:
                        finished = True
                        cut = choice.finish_reason == "length"
        except ProviderError:
            raise
        except Exception as e:
            raise p.translate(e, mid_stream=started) from None
        if not finished:
            raise ProviderResponseError(
                f"the reply stream from {p.base_url} ended before the reply was complete"
            )
        self.usage.cut_at_limit = cut

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()


class OpenAIProvider:
    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 2,
        max_tokens: int | None = None,
    ) -> None:
        import openai

        self.model = model
        self.max_tokens = max_tokens
        """Cap on reply length; None leaves it to the server."""
        self.base_url = base_url or "https://api.openai.com/v1"
        self.api_key_env = api_key_env
        self.client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or "not-needed",
            timeout=timeout,
            max_retries=max_retries,
        )

    def stream(self, messages: ChatMessages) -> OpenAIReply:
        return OpenAIReply(self, messages)

    def complete(self, messages: ChatMessages, *, purpose: str = "chat") -> str:
        return "".join(OpenAIReply(self, messages, json_only=purpose == "facts"))

    def token_counter(self) -> TokenCounter:
        return counter_for_model(self.model)

    def close(self) -> None:
        self.client.close()

    def translate(self, error: Exception, *, mid_stream: bool = False) -> ProviderError:
        """One line that says what to check; never the key, never a traceback."""
        import openai

        where = self.base_url
        if (mid_stream and isinstance(error, openai.APIConnectionError)
                and not isinstance(error, openai.APITimeoutError)):
            # The client reports a connection dropped mid-reply as a connection
            # error, but the server was reached: "is it running?" would mislead.
            return ProviderResponseError(
                f"the reply stream from {where} broke off before the reply was complete"
            )
        if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
            return ProviderAuthError(
                f"{where} refused the API key ({error.status_code}): check ${self.api_key_env}"
            )
        if isinstance(error, openai.NotFoundError):
            return ProviderNotFound(
                f"{where} answered 404 for model {self.model!r}: check the model name and base_url"
            )
        if isinstance(error, openai.RateLimitError):
            return ProviderRateLimited(
                f"{where} is rate limiting requests (429) after retries: wait and try again"
            )
        if isinstance(error, openai.APITimeoutError):
            return ProviderTimeout(
                f"{where} did not answer in time: raise timeout or check the server"
            )
        if isinstance(error, openai.APIConnectionError):
            return ProviderConnectionError(f"cannot reach {where}: is the server running?")
        if isinstance(error, openai.APIStatusError):
            return ProviderResponseError(
                f"{where} answered {error.status_code}: {self._short(error)}"
            )
        return ProviderResponseError(
            f"the reply stream from {where} failed: {type(error).__name__}: {self._short(error)}"
        )

    def _short(self, error: Exception) -> str:
        # The message quotes the server's answer, and a server may echo the key back.
        text = " ".join(str(error).split())
        if len(self.client.api_key) >= 8:
            text = text.replace(self.client.api_key, "[api key]")
        return text[:160] + ("…" if len(text) > 160 else "")
