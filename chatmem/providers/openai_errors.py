"""What an OpenAI-compatible server's failure becomes: one line that says what to check (the
key's variable, the model name, base_url, the server's own words), never the key, never a
traceback."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from chatmem.config.options import key_shaped
from chatmem.errors import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderNotFound,
    ProviderRefusedRequest,
    ProviderResponseError,
    ProviderTimeout,
)
from chatmem.privacy.secrets import SecretMask, credentials_of
from chatmem.providers.openai_limits import rate_limit_error

_CREDENTIALS = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9+/=._~-]{8,}")
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\[\]-]{0,63}")
"""A request field's name as a server's 400 names it (`reasoning_effort`, `messages[0]`)."""
_UNRECOGNIZED = re.compile(
    r"Unrecognized request arguments? supplied: ([A-Za-z_][A-Za-z0-9_]{0,63})\b")
"""OpenAI's words for a field it does not know, which its `param` leaves null."""


def translated(error: Exception, *, where: str, base_url: str, model: str, api_key_env: str,
               api_key: str | None, max_retries: int, mid_stream: bool = False) -> ProviderError:
    """`error`, raised asking the server at `base_url` (`where`: as errors show it) for
    `model`, as one line that says what to check; never the key, never a traceback."""
    import openai

    from chatmem.providers.unreachable import redirected, unreachable

    def mask(said: str, limit: int) -> str:
        return masked(said, limit, api_key=api_key, base_url=base_url)

    def short() -> str:
        # The message quotes the server's answer, and a server may echo the key back.
        return mask(str(error), 160)

    if isinstance(error, UnicodeDecodeError):
        return ProviderResponseError(f"{where} sent bytes that are not UTF-8"
                                     " in the middle of the reply stream")
    if isinstance(error, json.JSONDecodeError):
        return ProviderResponseError(f"{where} sent data that is not valid JSON"
                                     " in the middle of the reply stream")
    if (mid_stream and isinstance(error, openai.APIConnectionError)
            and not isinstance(error, openai.APITimeoutError)):
        # The client reports a connection dropped mid-reply as a connection
        # error, but the server was reached: "is it running?" would mislead.
        return ProviderResponseError(
            f"the reply stream from {where} broke off before the reply was complete"
        )
    if isinstance(error, openai.APIStatusError) and (moved := redirected(where, error)):
        return ProviderResponseError(moved, status=error.status_code)
    said = error.body.get("message") if isinstance(error, openai.PermissionDeniedError) \
        and isinstance(error.body, Mapping) else None
    if isinstance(said, str) and said.strip():
        # The key was taken; what it may not do (this model, from this country, in this
        # project) is in the server's words: "check $OPENAI_API_KEY" sent users to
        # replace a key that worked.
        return ProviderAuthError(f"{where} refused the request (403):"
                                 f" {mask(said, 160)}", status=403)
    if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
        return ProviderAuthError(
            f"{where} refused the API key ({error.status_code}): check ${api_key_env}",
            status=error.status_code)
    if isinstance(error, openai.NotFoundError) and said_model_unknown(error):
        return ProviderNotFound(
            f"{where} answered 404 for model {model!r}: check the model name and base_url",
            status=404)
    if isinstance(error, openai.NotFoundError):
        # No such path (a base_url without /v1, a gateway's route): not a model it lacks, and
        # not the served client's to mend by naming another (serve's model_not_found was).
        return ProviderResponseError(
            f"{where} answered 404 without saying model {model!r} is unknown ({short()}):"
            " check base_url", status=404)
    if isinstance(error, openai.RateLimitError):
        return rate_limit_error(where, error, max_retries)
    if isinstance(error, openai.APITimeoutError):
        return ProviderTimeout(
            f"{where} did not answer in time: raise timeout or check the server"
        )
    if isinstance(error, openai.APIConnectionError):
        return ProviderConnectionError(unreachable(where, base_url, error))
    if isinstance(error, openai.BadRequestError):
        # The request itself refused (a field passed on from a served client): the
        # server's own words say which field, and what it takes instead.
        said = error.body.get("message") if isinstance(error.body, Mapping) else None
        detail = mask(said if isinstance(said, str) else str(error), 300)
        for address in (base_url, where):  # a served client is not told where it is
            detail = detail.replace(address, "[the model's server]")
        # Only a field's name: the server may put anything there (its own echo of a header).
        param = error.param if isinstance(error.param, str) and _FIELD.fullmatch(
            error.param) else None
        if param is None and isinstance(said, str):
            # OpenAI names a field it does not know (typical_p) in its words only.
            unknown = _UNRECOGNIZED.match(said)
            param = unknown.group(1) if unknown else None
        if param is not None and (mask(param, 300) != param or key_shaped(param)):
            # A field's name never holds a key: one there (a server echoing the key, or a
            # header, as the field at fault) went to a served client in `param` and its
            # message, where the server's words never go.
            param = None
        return ProviderRefusedRequest(
            f"{where} answered 400: {short()}", detail=detail, param=param)
    if isinstance(error, openai.APIStatusError):
        return ProviderResponseError(
            f"{where} answered {error.status_code}: {short()}",
            status=error.status_code)
    if isinstance(error, openai.APIError):
        # An `error` event once the reply began (vLLM, OpenRouter and chatmem serve send
        # one when the model fails mid-reply): its words say what failed, where "not a
        # chat completion: check base_url" sent the user to a base_url that was right.
        return ProviderResponseError(f"{where} reported an error in the middle of the"
                                     f" reply: {mask(error.message, 160)}")
    # Anything else is data the client could not make sense of; its Python
    # exception's name and text would say nothing to the user.
    return ProviderResponseError(
        f"the reply stream from {where} held data that is not an OpenAI-compatible"
        " chat completion: check base_url and the server"
    )


_MODEL = re.compile(r"(?i)model|deployment|模型")
_UNKNOWN = re.compile(r"(?i)not[ _]?found|does ?n[o']t exist|not exist|unknown|no such"
                      r"|不存在|未找到|找不到|[没沒]有找到|未知")


def said_model_unknown(error: Exception) -> bool:
    """Whether a server's 404 says the model is unknown (OpenAI's code model_not_found,
    Azure's DeploymentNotFound, vLLM's "The model `x` does not exist", Ollama's 'model "x"
    not found'), not that the path is (FastAPI's "Not Found", Go's "404 page not found", an
    nginx page), in English or Chinese ("模型 x 不存在", "未找到模型"). Anthropic's says it by
    its type: {"type": "not_found_error", "message": "model: NAME"}."""
    if getattr(error, "code", None) in ("model_not_found", "DeploymentNotFound"):
        return True
    body = getattr(error, "body", None)
    said = " ".join(str(part) for part in (getattr(error, "message", ""),
                                           getattr(error, "type", None) or "",
                                           body[:300] if isinstance(body, str) else ""))
    return bool(_MODEL.search(said) and _UNKNOWN.search(said))


def masked(said: str, limit: int, *, api_key: str | None, base_url: str) -> str:
    """What a server said, on one line of at most `limit` characters, its credentials masked."""
    text = " ".join(said.split())
    # The key as sent, in the base URL, and base64-encoded as some gateways log it.
    text = SecretMask(credentials_of(api_key, base_url, None)).mask(text)
    # The same credentials as the server may quote them: an Authorization header.
    text = _CREDENTIALS.sub(r"\1 [api key]", text)
    return text[:limit] + ("…" if len(text) > limit else "")
