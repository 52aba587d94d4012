"""The OpenAI-shaped answers of `chatmem serve`: a completion, its usage and finish reason,
and an error as OpenAI words one, with the HTTP status it is answered with."""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse

from chatmem.errors import (
    ChatmemError,
    ExtensionFailed,
    NotFound,
    OverBudget,
    ProviderError,
    ProviderNotFound,
    ProviderQuotaExhausted,
    ProviderRateLimited,
    ProviderRefusedRequest,
    ProviderTimeout,
    RequestError,
    StoreError,
    StoreFailure,
    UsageError,
)

if TYPE_CHECKING:
    from chatmem.config.settings import Settings
    from chatmem.engine import Engine, TurnResult
    from chatmem.store import Store


def usage_json(result: TurnResult) -> dict[str, int]:
    """The usage the model said, else chatmem's count (as the prompt's estimate): a model
    that streams none (some servers, proxies that drop it) used tokens all the same, and a
    client that adds them up was told 0."""
    record = result.record
    return counted_usage(record.prompt_tokens, record.completion_tokens,
                         lambda: record.estimated_tokens or 0, record.model, result.reply)


def counted_usage(prompt: int | None, completion: int | None, estimate: Callable[[], int],
                  model: str | None, reply: str) -> dict[str, int]:
    """OpenAI's usage of the counts the model said, else of chatmem's (`estimate`: the
    prompt's; the reply counted for `model`)."""
    from chatmem.tokens import counter_for_model

    prompt = prompt if prompt is not None else estimate()
    if completion is None:
        completion = counter_for_model(model).count_text(reply) if reply else 0
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def finish_reason(result: TurnResult) -> str:
    """OpenAI's word for why the reply ended: `length` at the reply cap (a client may offer
    to continue), `content_filter` when the model's server filtered it, `cancelled` when the
    client went away, else `stop`."""
    from chatmem.notices import CutBy
    from chatmem.store.records import TurnStatus

    if result.status != TurnStatus.OK:
        return "cancelled"
    return {None: "stop", CutBy.LIMIT: "length", CutBy.FILTER: "content_filter"}[result.cut]


def chunk_json(completion_id: str, model: str, delta: dict[str, Any], finish: str | None,
               *, with_usage: bool) -> dict[str, Any]:
    """One chunk of a streamed reply; `with_usage`: the client asked for its usage."""
    chunk = {"id": completion_id, "object": "chat.completion.chunk",
             "created": int(time.time()), "model": model,
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if with_usage:
        chunk["usage"] = None  # OpenAI's every chunk but the last, when usage is asked
    return chunk


def sse_event(data: Mapping[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def completion_json(result: TurnResult, model: str, turn_id: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": result.reply},
                         "finish_reason": finish_reason(result)}],
            "usage": usage_json(result),
            "chatmem": {"turn": turn_id, "status": str(result.status)}}


def replied_usage(engine: Engine[Store] | None, reply: str) -> dict[str, int] | None:
    """The usage of `reply`, which `engine` took and did not store, when it says it."""
    if engine is None or engine.replied is None:
        return None
    usage, context = engine.replied
    return counted_usage(usage.prompt_tokens, usage.completion_tokens,
                         lambda: engine.estimate(context), engine.provider.model, reply)


MODEL_NOT_FOUND = "model_not_found"
"""OpenAI's error code for a model it does not have (a 404)."""
CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
"""OpenAI's error code for a request its model's context cannot hold."""
NOT_STORED = "not-stored"
"""X-Chatmem-Stored-As and `chatmem.status` of a reply answered but not stored (Unstored)."""


@dataclass(frozen=True)
class Unstored:
    """A reply the model completed (paid for) that could not be stored: the history's disk
    full, busy or read-only (answered_unstored). It is answered all the same, with `error` as
    a warning, not as an error the client retries and pays for again."""

    reply: str
    error: BaseException
    usage: dict[str, int] | None = None
    """Its usage (counted_usage), when the engine said what the reply was sent with."""


KEPT_FROM_CLIENT = frozenset({StoreFailure.ERASED_MEANWHILE, StoreFailure.NOT_PERMITTED})
"""Failures to store a reply that also keep it from the client: built on text a purge
erased meanwhile, or on a share this role lost."""


def answered_unstored(error: BaseException) -> bool:
    """Whether a completed reply `error` kept out of the history is answered all the same
    (Unstored): a history that could not store it (its disk full, busy, read-only) or a
    fault of chatmem's own (a bug: a 500 had the openai SDKs ask, and pay, twice more), not
    an erasure, a lost share, a deleted session (NotFound) nor a client gone or a server
    stopping (KeyboardInterrupt)."""
    if isinstance(error, StoreError):
        return error.kind not in KEPT_FROM_CLIENT
    return not isinstance(error, NotFound | KeyboardInterrupt)


def unstored_json(unstored: Unstored, model: str, completion_id: str,
                  settings: Settings | None) -> dict[str, Any]:
    """A completion of `unstored`'s reply; `chatmem` (a field OpenAI's clients ignore) says
    it was not stored, and why, in the words an error would have."""
    return {"id": completion_id, "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": unstored.reply},
                         "finish_reason": "stop"}],
            **({"usage": unstored.usage} if unstored.usage is not None else {}),
            "chatmem": unstored_field(unstored, settings)}


def unstored_field(unstored: Unstored, settings: Settings | None) -> dict[str, Any]:
    """The `chatmem` field of an answer whose reply was not stored (no turn names it)."""
    return {"turn": None, "status": NOT_STORED,
            "warning": error_json(unstored.error, settings)["error"]["message"]}


def status_of(error: BaseException) -> int:
    if isinstance(error, RequestError | OverBudget | ProviderRefusedRequest):
        # The model refused a field the client sent: the client's to change, and a 400 is
        # not retried by an SDK (a 502 was, each attempt a failed turn).
        return 400
    if isinstance(error, StoreError) and error.kind is StoreFailure.NOT_PERMITTED:
        return 403  # a share read-only, or what only its owner may do: the client's to change
    if isinstance(error, StoreError) and error.kind is StoreFailure.BUSY:
        # Another process held the write lock past the wait (an import): nothing is wrong
        # here, and an SDK retries a 503 after Retry-After, where it gave up on a 500.
        return 503
    if isinstance(error, NotFound | ProviderNotFound):
        return 404
    if isinstance(error, ProviderRateLimited | ProviderQuotaExhausted):
        return 429
    if isinstance(error, ProviderTimeout):
        return 504
    if isinstance(error, ProviderError):
        # The model's server refused or failed, this one did not: its 401 is not the
        # client's key, nor its 500 chatmem's (an SDK tells a 401 as the caller's key).
        return 502
    if isinstance(error, UsageError):
        return 400
    return 500


def error_json(error: BaseException, settings: Settings | None = None) -> dict[str, Any]:
    """An OpenAI-shaped error: one line, never a secret, a traceback nor the path of the
    history (`settings`: the request's) on the server."""
    from chatmem.render.errors import Client, client_error_text

    if isinstance(error, ChatmemError):
        message = client_error_text(error, settings, client=Client.API)
    else:
        message = f"chatmem could not take this turn ({type(error).__name__})"
    status = status_of(error)
    # A 429 is no fault of the request: typed and coded as OpenAI's own rate limit errors,
    # and a used-up quota as OpenAI's (an SDK tells it from a limit that waiting ends).
    kind = ("rate_limit_error" if status == 429 else "invalid_request_error" if status < 500
            else "api_error")
    code = ("rate_limit_exceeded" if status == 429 else
            error.code if isinstance(error, RequestError) else None)
    param = getattr(error, "param", None)
    if isinstance(error, ProviderQuotaExhausted):
        kind = code = "insufficient_quota"
    if isinstance(error, ProviderNotFound):
        code = MODEL_NOT_FOUND  # as OpenAI's: a client tells it from a path it lacks
    if isinstance(error, OverBudget):
        # As OpenAI refuses a context past the model's window: clients (LangChain, the
        # agents that trim and retry) match on the code and the field.
        code, param = CONTEXT_LENGTH_EXCEEDED, "messages"
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


RETRY_AFTER_S = 5
"""How long a client is asked to wait before it tries again after a 503 (the store busy)."""


def error_response(error: BaseException, status: int,
                   settings: Settings | None = None) -> JSONResponse:
    headers = {"Retry-After": str(RETRY_AFTER_S)} if status == 503 else None
    wait = error.retry_after if isinstance(error, ProviderRateLimited) else None
    if status == 429 and wait is not None:
        # The model's server said how long; without it an SDK retried at once (and was
        # refused again), and a wait of a day looked like one of a second.
        headers = {"Retry-After": str(max(1, math.ceil(wait)))}
    if isinstance(error, ProviderError | ExtensionFailed) and status >= 500:
        # chatmem's own client asked the model again what it never began on (max_retries),
        # and not what it may be answering and billing (a reply cut off, a timeout, a
        # gateway's 502/504): the openai SDKs, which retry any 5xx twice unless this says
        # not to, asked it all again, three times over. A plugin's strategy that failed to
        # build the context fails the same way on the same history: asked again, it did.
        headers = {"x-should-retry": "false"}
    return JSONResponse(error_json(error, settings), status_code=status, headers=headers)
