"""`openai`: any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp, LM Studio).

Errors become one line that says what to check (openai_errors). The API key is read from the
environment variable named in config and never appears in an error, a log or
the database.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Self

from chatmem.config.endpoint import parse_endpoint
from chatmem.config.settings import OPENAI_MAX_REPLY_TOKENS
from chatmem.errors import ProviderError, ProviderNotFound, ProviderResponseError
from chatmem.images import ImageRule
from chatmem.notices import UsageIgnored
from chatmem.providers.base import ChatMessages, Purpose, Usage, checked_counts
from chatmem.providers.openai_answers import thinking, whole_answer
from chatmem.providers.openai_errors import masked, translated
from chatmem.providers.openai_limits import (
    BYTES_BESIDE_REPLY,
    BYTES_PER_TOKEN_AT_MOST,
    CHARS_PER_TOKEN_AT_MOST,
    cap_field_for,
    no_text_error,
    other_cap_field,
)
from chatmem.tokens import TokenCounter, counter_for_model

if TYPE_CHECKING:
    import httpx2

    from chatmem.providers.deadline import ReplyDeadline

DEFAULT_MAX_REPLY_TOKENS = OPENAI_MAX_REPLY_TOKENS
"""The reply cap when max_reply_tokens is unset (config.settings says why)."""
LISTING_TIMEOUT = 8.0
"""Seconds a model listing may take, asked once: front ends ask `serve` for /v1/models as
they open and give up within about 10 s (Open WebUI), and a hung endpoint held the listing
for 3 x `timeout` (180 s by default), a chat's bounds, while it answers with the configured
model as soon as the endpoint's list fails."""
NOT_FOUND_LISTING = 3.0
"""Seconds the listing a 404 for a model names may take (OpenAIProvider._served): the turn
has failed, and its error waits for it."""


class OpenAIReply:
    def __init__(
        self, provider: OpenAIProvider, messages: ChatMessages, *,
        purpose: Purpose = Purpose.CHAT,
    ) -> None:
        self._provider = provider
        self._messages = messages
        self._purpose = purpose
        cap = provider.cap_for(purpose)
        self._max_chars = cap * CHARS_PER_TOKEN_AT_MOST
        """Past this many characters the server ignored the cap: reading stops there."""
        self._most_bytes = cap * BYTES_PER_TOKEN_AT_MOST + BYTES_BESIDE_REPLY
        """Past this many bytes of body the server ignored the cap (a piece that never ends
        is no character yet): reading stops there, before memory fills."""
        self._stream: Any = None
        self.usage = Usage()
        self.rendered_prompt: str | None = None

    def __iter__(self) -> Iterator[str]:
        p = self._provider
        finished = cut = filtered = False
        started = False
        reason: object = None
        deadline = p.begin_reply(self._most_bytes)
        try:
            self._stream = p.request_stream(self._messages, purpose=self._purpose)
            started = True
            kind = self._stream.response.headers.get("content-type", "")
            if "text/event-stream" not in kind:
                # Some servers ignore stream=True and answer once, as JSON.
                yield from self._whole_answer(kind)
                return
            yield ""  # accepted: it is answering (ReplyStream), before its first word
            received = 0
            for chunk in self._stream:
                if chunk.usage is not None:
                    self.usage = self._reported(chunk.usage)
                for choice in chunk.choices or ():
                    # A refusal (OpenAI's `delta.refusal`) is what the model said instead of
                    # a reply: it is the reply, shown and stored as any other.
                    piece = choice.delta and (choice.delta.content or choice.delta.refusal)
                    if not piece and thinking(choice.delta):
                        deadline.progress()
                    if piece:
                        if not isinstance(piece, str):
                            raise ProviderResponseError(
                                f"{p.where} sent a piece of the reply that is not text"
                                " (an OpenAI-compatible server sends strings)")
                        deadline.progress()
                        # Cut before it is shown, stored or passed on: one piece of a
                        # server that ignores max_tokens was a whole megabyte reply.
                        over = len(piece) > self._max_chars - received
                        piece = piece[:self._max_chars - received]
                        received += len(piece)
                        if piece:
                            yield piece
                        if over:
                            break
                    if choice.finish_reason:
                        finished, reason = True, choice.finish_reason
                        cut = choice.finish_reason == "length"
                        filtered = choice.finish_reason == "content_filter"
                else:
                    continue
                # The server ignored max_tokens (or none was set): stop reading.
                self.close()
                finished = cut = True
                break
        except Exception as e:
            if not finished:
                if isinstance(e, ProviderError):
                    raise
                raise p.translate(e, mid_stream=started) from None
            # The reply had ended (finish_reason): a drop, or a stall past the read timeout,
            # lost only what comes after it (the usage, [DONE]), not the reply paid for.
            # (Reading stops at [DONE], not at the usage before it: closing a response not
            # read to its end loses its connection, and the next turn paid a new handshake.)
            self.close()
        finally:
            p.end_reply()
        if not finished:
            raise ProviderResponseError(
                f"the reply stream from {p.where} ended before the reply was complete"
            )
        self.usage.cut_at_limit, self.usage.filtered = cut, filtered
        if not received and not (cut or filtered):
            # At the cap (a reasoning model that spent it thinking) or stopped by a filter,
            # no text is the reply the model gave; ended otherwise, it is a fault.
            raise no_text_error(p.where, reason)

    def _whole_answer(self, kind: str) -> Iterator[str]:
        """The reply of a server that answered with one JSON document instead of a stream."""
        p = self._provider
        answer = whole_answer(self._stream.response, kind, where=p.where,
                              most=self._most_bytes, close=self.close)
        text, reason = answer.text, answer.finish_reason
        self.usage = self._reported(answer.usage)
        self.usage.cut_at_limit = reason == "length" or len(text) > self._max_chars
        self.usage.filtered = reason == "content_filter"
        if not (text or self.usage.cut_at_limit or self.usage.filtered):
            raise no_text_error(p.where, reason)
        if text:
            yield text[:self._max_chars]

    def _reported(self, raw: Any) -> Usage:
        """The server's token counts; none, with a notice saying why, when they are no counts
        (text broke the running total after the turn was stored, and every later `logs`;
        10**23 overflowed the store's integer, losing the paid reply)."""
        p = self._provider
        fields = raw if isinstance(raw, Mapping) else getattr(raw, "__dict__", None)
        if not isinstance(fields, Mapping):
            return Usage(ignored=UsageIgnored(
                p.name, f"its usage is {type(raw).__name__}, not token counts"))
        usage, wrong = checked_counts(Usage(fields.get("prompt_tokens"),
                                            fields.get("completion_tokens")))
        # The server wrote it: a key it echoes back is masked as in its errors.
        return usage if wrong is None else Usage(ignored=UsageIgnored(p.name,
                                                                      p._masked(wrong, 300)))

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()


class OpenAIProvider:
    name = "openai"
    images: ImageRule | None = ImageRule.OPENAI_TILES
    """OpenAI-compatible endpoints take image parts (a model that cannot see them says so)."""

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
        reply_timeout: float | None = None,
        idle_timeout: float | None = None,
        sampling: Mapping[str, Any] | None = None,
        chat_max_tokens: int | None = None,
    ) -> None:
        import openai

        from chatmem.providers.openai_resend import ResendOnlyUnsent

        self.model = model
        self.max_tokens = max_tokens or DEFAULT_MAX_REPLY_TOKENS
        """Cap on reply length, sent to the server in `cap_field` (summaries, facts)."""
        self.chat_max_tokens = chat_max_tokens or self.max_tokens
        """Cap on a chat reply's length: an option's (`-o max_reply_tokens`, a served
        request's max_tokens) when one is given."""
        self.base_url = base_url or "https://api.openai.com/v1"
        endpoint = parse_endpoint(self.base_url)
        self._cap_field = [cap_field_for(endpoint.base)]
        """`cap_field`, in a list its copies (`with_options`) share."""
        self.where = endpoint.shown
        """The base URL as errors show it: credentials in it are never repeated."""
        self.api_key_env = api_key_env
        self.reply_timeout = reply_timeout
        """Seconds a whole reply may take; None: only `timeout` (each read) bounds it."""
        self.idle_timeout = idle_timeout
        """Seconds a reply may go without a new piece; keep-alive comments are no piece."""
        self.sampling = dict(sampling or {})
        """Model options (`-o`, a template's, a served request's): temperature, top_p, seed
        and any field the endpoint takes, merged into every chat reply's request body as
        named; never into a summary's or a fact extraction's."""
        self._replying = threading.local()
        self.client = openai.OpenAI(
            # Built, not glued: the base URL's query goes with each request, after its path.
            base_url=endpoint.base,
            default_query=endpoint.query or None,
            api_key=api_key or "not-needed",
            timeout=timeout,
            max_retries=max_retries,
            http_client=ResendOnlyUnsent(event_hooks={"response": [self._watch_body]}),
        )

    @property
    def cap_field(self) -> str:
        """The request field the reply cap goes in (`cap_field_for`); a server that refuses it
        naming the other is asked again with that one, and from then on, by this model and
        every copy of it with other options (a served request's): each learnt it anew, and
        a client switching options was refused, and asked again, on every switch."""
        return self._cap_field[0]

    @cap_field.setter
    def cap_field(self, field: str) -> None:
        self._cap_field[0] = field

    def begin_reply(self, most_bytes: float = float("inf")) -> ReplyDeadline:
        """The deadline of the reply this thread is about to request; `most_bytes`: the body
        bytes it may take."""
        from chatmem.providers.deadline import ReplyDeadline

        deadline = ReplyDeadline(self.where, self.reply_timeout or float("inf"),
                                 self.idle_timeout or float("inf"), most_bytes)
        self._replying.deadline = deadline
        return deadline

    def end_reply(self) -> None:
        self._replying.deadline = None

    def _watch_body(self, response: httpx2.Response) -> None:
        """Read the reply's body through its deadline (an httpx response hook)."""
        from chatmem.providers.deadline import watch_body

        deadline: ReplyDeadline | None = getattr(self._replying, "deadline", None)
        if deadline is not None:
            watch_body(response, deadline)

    def stream(self, messages: ChatMessages) -> OpenAIReply:
        return OpenAIReply(self, messages)

    def cap_for(self, purpose: Purpose) -> int:
        """The max_tokens a reply for `purpose` is asked with."""
        return self.chat_max_tokens if purpose is Purpose.CHAT else self.max_tokens

    def request_stream(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> Any:
        """POST a streamed chat completion request: the client's stream of chunks.

        The body is sent as built, through the client's public `post`:
        `chat.completions.create` walks every message through its request types
        first, 0.15 ms a message here, so a 36-message context waited 5 ms more for
        its first token (benchmarks/clients.py); the messages are plain JSON already.
        """
        import openai
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        body: dict[str, Any] = {
            "model": self.model, "messages": [dict(m) for m in messages], "stream": True,
            "stream_options": {"include_usage": True}, self.cap_field: self.cap_for(purpose)}
        if purpose is Purpose.FACTS:
            # Servers constrain decoding to JSON (llama.cpp with a grammar), so even a
            # small model answers a fact extraction request parseably.
            body["response_format"] = {"type": "json_object"}
        elif purpose is Purpose.CHAT and self.sampling:
            # Options shape the chat's replies; a summary or an extraction is memory's own
            # call, made as configured: a reply's cap, stop words or response format would
            # cut or bend what is stored and sent again on every later turn.
            # Any field the endpoint takes (top_k, repeat_penalty) is sent as named.
            body.update(self.sampling)
        try:
            return self.client.post("/chat/completions", cast_to=ChatCompletion, body=body,
                                    stream=True, stream_cls=openai.Stream[ChatCompletionChunk])
        except openai.BadRequestError as e:
            other = other_cap_field(e, self.cap_field)
            if other is None:
                raise
        # Refused before any reply began: asking again with the field it names costs nothing.
        body[other] = body.pop(self.cap_field)
        self.cap_field = other
        return self.client.post("/chat/completions", cast_to=ChatCompletion, body=body,
                                stream=True, stream_cls=openai.Stream[ChatCompletionChunk])

    def list_models(self) -> list[str]:
        """The model names the endpoint serves (`GET /models`), sorted; asked once, and
        given at most LISTING_TIMEOUT (or `timeout`, if shorter) to answer."""
        try:
            return self._listed(LISTING_TIMEOUT)
        except Exception as e:
            raise self._translated(e) from None

    def _listed(self, at_most: float) -> list[str]:
        timeout = self.client.timeout
        bound = min(timeout, at_most) if isinstance(timeout, int | float) else at_most
        listing = self.client.with_options(timeout=bound, max_retries=0)
        return sorted(model.id for model in listing.models.list())

    def _served(self) -> tuple[str, ...] | None:
        """What the server lists, for its 404 for a model to name (the user guessed at
        names, or ran `chatmem models` to learn them); None when it does not list them
        within NOT_FOUND_LISTING. A name that holds the key (a server quoting it back) is
        left out. Asked once a minute at most (chatmem.providers.listings)."""
        from chatmem.providers.listings import recent_listing

        def listed() -> tuple[str, ...] | None:
            try:
                names = self._listed(NOT_FOUND_LISTING)
            except Exception:
                return None
            return tuple(name for name in names if self._masked(name, 200) == name)

        return recent_listing(self.base_url, self.client.api_key, listed)

    def complete(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> str:
        return "".join(OpenAIReply(self, messages, purpose=purpose))

    def token_counter(self) -> TokenCounter:
        return counter_for_model(self.model)

    def with_options(self, sampling: Mapping[str, Any], chat_max_tokens: int | None) -> Self:
        """This model with other per-call options (as opened with them), sharing its client
        and what it learns of the server (`cap_field`): closed with this one, never on its
        own."""
        other = copy.copy(self)
        other.sampling, other.chat_max_tokens = dict(sampling), chat_max_tokens or self.max_tokens
        return other

    def close(self) -> None:
        self.client.close()

    def translate(self, error: Exception, *, mid_stream: bool = False) -> ProviderError:
        """One line that says what to check; never the key, never a traceback. A 404 for
        the model carries the models the server lists (ProviderNotFound.served)."""
        said = self._translated(error, mid_stream=mid_stream)
        if isinstance(said, ProviderNotFound):
            said.served = self._served()
        return said

    def _translated(self, error: Exception, *, mid_stream: bool = False) -> ProviderError:
        return translated(error, where=self.where, base_url=self.base_url, model=self.model,
                          api_key_env=self.api_key_env, api_key=self.client.api_key,
                          max_retries=self.client.max_retries, mid_stream=mid_stream)

    def _masked(self, said: str, limit: int) -> str:
        return masked(said, limit, api_key=self.client.api_key, base_url=self.base_url)
