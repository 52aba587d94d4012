"""What a `/v1/chat/completions` request asks, read and checked: the conversation it
belongs to (conversation_ids), the strategy and model it names, the client's history and the
new message. A request chatmem cannot take as a turn is a RequestError naming the field."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from chatmem.errors import RequestError
from chatmem.serve.answers import CONTEXT_LENGTH_EXCEEDED
from chatmem.serve.conversation_ids import (
    SharedId,
    conversation_of,
    fingerprint_with_system_prompt,
)
from chatmem.speakers import speaker_of, with_speaker
from chatmem.text import valid_text


@dataclass(frozen=True)
class TurnAsked:
    """One request, read: the conversation, the strategy and model it names, the client's
    system prompt, its history before the new message, and the new message."""

    conversation: str
    """The session: the one an id names, or for a conversation without one (`fingerprinted`)
    the first name of those its opening gives (`session_of_opening` picks among them)."""
    strategy: str | None
    """The strategy the request names (MODEL@STRATEGY); None: the session's own."""
    model: str | None
    system: str | None
    """The request's system messages, wherever they are among its messages, in order."""
    prior: tuple[Any, ...]
    """The client's history before the new message: its user and assistant messages."""
    text: str
    stream: bool
    options: dict[str, Any]
    fingerprinted: bool = False
    """No id named the conversation: it is known by how it began, and by its history."""
    include_usage: bool = False
    """A streamed reply ends with a chunk of its own holding the usage (OpenAI's
    `stream_options.include_usage`); without it, no usage is streamed."""
    shared: SharedId | None = None
    """The id has the form `OWNER/NAME`; `conversation` is then the session a file (one
    user) makes of it, as of any id."""
    one_chat: bool = False
    """An id names this one chat (a header, `metadata`; not `user`, which every chat of one
    person sends): a history that leaves the stored one is this chat's, edited
    (`leaves_history`)."""
    named_before: str | None = None
    """For a `fingerprinted` one, the name chatmem gave its opening before the fingerprint
    left system messages out (`fingerprint_with_system_prompt`): a chat begun then goes on
    in the session it has."""
    speaker: str | None = None
    """The new message's speaker (its `name`), whose label `text` opens with (none for a
    name that is its role's word): recall leaves it out of what it searches
    (ContextRequest.speaker), and its facts are not the profile owner's."""
    reply_begun: str | None = None
    """The assistant's reply so far, when the request ends with it after the user's message
    (`text`): a "Continue" of a reply cut short (Open WebUI's), which the model goes on
    with; stored as one reply, replacing the stored one it continues."""


SAMPLING = {"temperature": float, "top_p": float, "presence_penalty": float,
            "frequency_penalty": float, "seed": int, "top_k": int, "min_p": float,
            "repetition_penalty": float, "repeat_penalty": float,
            # The samplers of the servers a client is pointed at through chatmem (llama.cpp's
            # server, vLLM, text-generation-webui, koboldcpp), as their clients (SillyTavern)
            # send them: dropped unsaid, a reply was sampled otherwise than asked. A server
            # that does not read one ignores it, as they do; OpenAI's refuses it, naming it.
            "typical_p": float, "min_tokens": int, "tfs_z": float, "top_a": float,
            "mirostat": int, "mirostat_tau": float, "mirostat_eta": float,
            "repeat_last_n": int, "min_keep": int, "length_penalty": float,
            "dynatemp_range": float, "dynatemp_exponent": float, "top_n_sigma": float,
            "dry_multiplier": float, "dry_base": float, "dry_allowed_length": int,
            "dry_penalty_last_n": int, "xtc_probability": float, "xtc_threshold": float}
"""Request fields passed on to the model as options (max_tokens caps the reply); those
`-o` knows (top_k, min_p) are held to its ranges too (config.options.OPTION_RULES)."""
CHECKED_AS_OPTIONS = ("top_k", "min_p")


def _stop_words(value: Any) -> bool:
    # Any number: OpenAI takes 4, llama.cpp, vLLM and Ollama more (a group chat's names), and
    # a model that takes fewer refuses the request naming `stop`, as for any field.
    return isinstance(value, str) or (isinstance(value, list) and len(value) > 0
                                      and all(isinstance(v, str) for v in value))


def _bias(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(v, int | float) and not isinstance(v, bool) and -100 <= v <= 100
        for v in value.values())


PASSED_ON: dict[str, tuple[Callable[[Any], bool], str]] = {
    "stop": (_stop_words, "a string or a list of strings"),
    "response_format": (lambda v: isinstance(v, dict) and isinstance(v.get("type"), str),
                        'an object with a "type", e.g. {"type": "json_object"}'),
    "logit_bias": (_bias, "an object of token ids to numbers from -100 to 100"),
    # How hard or how long the model works, or on which tier: the reply is still its text.
    "reasoning_effort": (lambda v: isinstance(v, str), 'a string, e.g. "low"'),
    "verbosity": (lambda v: isinstance(v, str), 'a string, e.g. "low"'),
    "service_tier": (lambda v: isinstance(v, str), 'a string, e.g. "flex"'),
    # A server's own: its chat template's switches (vLLM, SGLang, llama.cpp's server; Qwen3's
    # {"enable_thinking": false}) and OpenRouter's reasoning settings. Dropped unsaid, a
    # model asked not to think thought all the same, for minutes on a local machine.
    "chat_template_kwargs": (lambda v: isinstance(v, dict),
                             'an object, e.g. {"enable_thinking": false}'),
    "reasoning": (lambda v: isinstance(v, dict), 'an object, e.g. {"effort": "low"}'),
}
"""Request fields the model is given as they are (checked for their shape): what it says
is stored as the reply whatever they asked of it."""
NOT_RETURNED = {
    "logprobs": "logprobs is not returned",
    "top_logprobs": "top_logprobs is not returned",
    "audio": "audio is not returned",
    "web_search_options": "a web search's citations are not returned",
    "prediction": "a predicted output's accepted and rejected tokens are not returned",
}
"""Request fields whose answer a stored turn does not keep: refused, not dropped unsaid
(false and 0 ask for nothing: `logprobs: false` is taken)."""
DROPPED = {"parallel_tool_calls": bool}
"""Request fields taken and not sent, as they ask nothing here: parallel tool calls are
about tools, which are refused (OpenAI refuses the field in a request without tools)."""


MAX_BODY_BYTES = 16 * 2**20
"""The largest request body read: more is refused (413) before it is read whole or parsed.
The largest context windows (about 2 million tokens) hold about 8 MB of English at 4 bytes
a token, and 2 million CJK characters, each about a token, are 12 MB as JSON's \\uXXXX
escapes: a request any model could take whole fits, with room. A 60 MB body took 52 s and
2.4 GB of memory before it was refused over the budget."""


def refuse_past_budget(asked: TurnAsked, budget: int) -> None:
    """RequestError when what no strategy drops (the request's system messages and its new
    message) is more bytes than `budget` tokens can hold at the most bytes a token has: it
    is refused before anything is tokenized or stored, as the engine would refuse it over
    the budget once every token was counted."""
    from chatmem.tokens import MOST_BYTES_PER_TOKEN, most_bytes_within

    size = len(asked.text.encode()) + len((asked.system or "").encode())
    if budget and size > most_bytes_within(budget):
        raise RequestError(
            f"not sent: the system messages and the last message are {size:,} bytes, more "
            f"than {size // MOST_BYTES_PER_TOKEN:,} tokens, over the context budget of "
            f"{budget:,}; shorten them", "messages", code=CONTEXT_LENGTH_EXCEEDED)


def parsed_body(raw: bytes) -> Any:
    """A request's body read as JSON; RequestError when it is not JSON (bytes that are not
    text, or nested beyond what Python reads)."""
    try:
        return json.loads(raw, parse_int=_integer)
    except (ValueError, RecursionError):
        raise RequestError("the body is not JSON") from None


def _integer(digits: str) -> int | float:
    """A JSON integer; one longer than Python reads as an int (4,300 digits) is taken as
    the infinite float it rounds to, which the field holding it then refuses naming itself
    (as JSON's 1e400), instead of the whole body being called not JSON."""
    try:
        return int(digits)
    except ValueError:
        return float(digits)


def without_credentials_asked(asked: TurnAsked, secrets: Mapping[str, str]) -> TurnAsked:
    """`asked` with `secrets` (the credentials the server runs with: providers.typed_secrets)
    replaced by their labels in its system messages, its history, its new message and the
    reply to it a Continue sends, as the engine masks a turn's input: stored masked (a
    turn's context holds its system messages), the client's copies match what is stored (a
    regenerate, an edit, a conversation known by its opening) only when masked alike."""
    from dataclasses import replace

    from chatmem.privacy.secrets import TypedMask

    masked = TypedMask(secrets)
    return replace(asked, text=masked(asked.text), system=masked.optional(asked.system),
                   prior=tuple(replace(m, content=masked(m.content)) for m in asked.prior),
                   reply_begun=masked.optional(asked.reply_begun))


def read_request(body: Any, headers: Mapping[str, str]) -> TurnAsked:
    """The turn a chat-completions request asks for; RequestError naming the field when it is
    not one chatmem can take (no user message last, n > 1, tool calls, non-text parts)."""
    from chatmem.app.client_history import ClientMessage

    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty list", "messages")
    if body.get("n") not in (None, 1):
        raise RequestError("n must be 1: chatmem stores one reply as one turn", "n")
    if body.get("tools") or body.get("functions"):
        raise RequestError("tool calls are not taken as chatmem turns; send them to the model "
                          "directly", "tools")
    read = [_message(m, i) for i, m in enumerate(messages)]
    # A system message after the question is the client's instruction too (SillyTavern's
    # post-history instructions, an agent's reminder), as OpenAI takes it: a 400 refused
    # every request of such a client.
    said = [m for m in read if m.role != "system"]
    begun = _reply_begun(said)
    if begun is not None:
        said = said[:-1]
    if not said or said[-1].role != "user":
        raise RequestError("the last message must be the user's (or the assistant's reply "
                           "to it so far, to be continued)", "messages")
    last = said[-1]
    if not last.content.strip():
        raise RequestError("the last message is empty: nothing to send", "messages")
    conversation, fingerprinted, shared, one_chat = conversation_of(body, headers, read)
    # Every system message of the request is the client's instruction for it, sent as its
    # system prompt in its words (a RAG front end's "Relevant docs: …" just before the
    # question too), never stored as history: memory would send a stored one again out of
    # its place (recall, a summary), where it is quoted as data.
    system_parts = [m.content for m in read if m.role == "system"]
    prior = tuple(ClientMessage(m.role, m.content, m.speaker) for m in said[:-1])
    if not isinstance(body.get("model", ""), str):
        raise RequestError("model must be a string, e.g. \"gpt-4o-mini@window\"", "model")
    if not isinstance(body.get("stream", False), bool | None):
        raise RequestError("stream must be true or false", "stream")
    model, strategy = _model_and_strategy(valid_text(body.get("model") or ""))
    stream_options = body.get("stream_options")
    if stream_options is not None and (not isinstance(stream_options, dict) or
                                       stream_options.get("include_usage") not in
                                       (None, True, False)):
        raise RequestError('stream_options must be an object such as {"include_usage": true}',
                           "stream_options")
    options: dict[str, Any] = {}
    for key, kind in SAMPLING.items():
        if body.get(key) is not None:
            value = body[key]
            try:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise TypeError(value)  # "0.7" and true are not numbers in JSON
                if kind is int and value != int(value):
                    raise RequestError(f"{key} must be a whole number", key)  # 1.5 is not 1
                options[key] = kind(value)
                if not math.isfinite(options[key]):
                    raise ValueError(value)
            except (TypeError, ValueError, OverflowError):
                raise RequestError(f"{key} must be a finite number", key) from None
    for key, (fits, shape) in PASSED_ON.items():
        # No stop words (`[]`, as SillyTavern sends none) ask for nothing, as a null does.
        if body.get(key) is not None and not (key == "stop" and body[key] == []):
            if not fits(body[key]):
                raise RequestError(f"{key} must be {shape}", key)
            options[key] = body[key]
    _check_options(options)
    for key, what in NOT_RETURNED.items():
        if body.get(key) not in (None, False, 0):
            raise RequestError(f"{what} through chatmem; ask the model directly", key)
    for key, kind in DROPPED.items():
        if body.get(key) is not None and not isinstance(body[key], kind):
            raise RequestError(f"{key} must be true or false", key)
    modalities = body.get("modalities")
    if modalities is not None and (not isinstance(modalities, list) or
                                   any(m != "text" for m in modalities)):
        raise RequestError('only text is returned through chatmem: modalities may be ["text"]; '
                           "ask the model directly for audio", "modalities")
    # The newer name wins when both are given; a null one is not given (the SDK sends it so),
    # nor is -1, which LM Studio and llama.cpp read as no cap (the configured one holds).
    field = next((f for f in ("max_completion_tokens", "max_tokens")
                  if body.get(f) is not None and not _no_cap(body[f])), None)
    if field is not None:
        cap = body[field]
        if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
            raise RequestError(f"{field} must be a whole number of 1 or more", field)
        options["max_reply_tokens"] = cap
    return TurnAsked(conversation=conversation, strategy=strategy, model=model,
                     system="\n\n".join(system_parts)
                     if system_parts else None, prior=prior, text=last.content,
                     stream=bool(body.get("stream")), options=options,
                     fingerprinted=fingerprinted, shared=shared, one_chat=one_chat,
                     named_before=fingerprint_with_system_prompt(read)
                     if fingerprinted else None, speaker=last.speaker, reply_begun=begun,
                     include_usage=bool(stream_options and stream_options.get("include_usage")))


def _reply_begun(said: list[_Read]) -> str | None:
    """The reply a "Continue" asks the model to go on with: the last message, when it is
    the assistant's, holds some text, and follows the user's message. Open WebUI sends its
    history up to and with the reply it shows cut short, and adds what comes to it."""
    if (len(said) < 2 or said[-1].role != "assistant" or said[-2].role != "user"
            or not said[-1].content.strip()):
        return None
    return said[-1].content


def _no_cap(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value == -1


SEEDS = (-(2**63), 2**63 - 1)
"""The seeds OpenAI's API takes (a 64-bit integer): a larger one was passed on as it came,
for the model's server to fail on or wrap (a C sampler's seed is 32 or 64 bits), where `-o
seed` is held to its range."""


def _check_options(options: dict[str, Any]) -> None:
    """The fields `-o` knows held to its ranges (a top_k of -1 is no number of tokens), and
    a seed to the ones OpenAI's API takes (llama.cpp reads -1 as a random one)."""
    from chatmem.config.options import check_option, shown_value
    from chatmem.errors import UsageError

    low, high = SEEDS
    if "seed" in options and not low <= options["seed"] <= high:
        raise RequestError(f"seed must be a whole number from -2**63 to 2**63-1, got "
                           f"{shown_value(options['seed'])}", "seed")

    for key in CHECKED_AS_OPTIONS:
        if key in options:
            try:
                options[key] = check_option(key, options[key], key)
            except UsageError as e:
                raise RequestError(str(e), key) from None


@dataclass(frozen=True)
class _Read:
    role: str
    content: str
    speaker: str | None = None


def _message(message: Any, index: int) -> _Read:
    where = f"messages[{index}]"
    if not isinstance(message, dict):
        raise RequestError(f"{where} must be an object", "messages")
    role = message.get("role")
    if role in ("tool", "function") or message.get("tool_calls"):
        raise RequestError(f"{where}: tool calls are not taken as chatmem turns; send them to "
                          "the model directly", "messages")
    if role == "developer":
        role = "system"
    if role not in ("system", "user", "assistant"):
        raise RequestError(f"{where}: unknown role {role!r}", "messages")
    # Every message, not only the new one the engine cleans: an earlier one is stored as
    # history, a system one sent, and neither can hold a lone surrogate ("\ud83d" from a
    # client that cut an emoji's pair) as UTF-8.
    content = valid_text(_text(message.get("content"), where))
    name = message.get("name")
    if name == "":
        # As OpenAI refuses it (its names need a character), and as a blank one is here: a
        # client that means no speaker leaves `name` out.
        raise RequestError(f"{where}.name must be one line of 1 to 64 characters, the"
                           " speaker's name", "messages")
    speaker = speaker_of(name, f"{where}.name", lambda why: RequestError(why, "messages"), role)
    text = with_speaker(role, content, speaker)
    if speaker is None and role == "user" and isinstance(name, str) and name.strip():
        # Named by its own role (AutoGen's "user"): no label to write, but still a named
        # member's, or a group chat's "User" (or "ｕｓｅｒ") would speak as the profile owner.
        speaker = valid_text(name.strip().rstrip(":\uff1a").rstrip())
    return _Read(role, text, speaker)


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        texts = []
        for i, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            # A refusal is the text of the assistant message the SDK hands back.
            field = {"text": "text", "refusal": "refusal"}.get(kind) if kind else None
            if field is None or not isinstance(part, dict):
                hint = " (an image goes with `chatmem ask -a`)" if kind == "image_url" else ""
                raise RequestError(f"{where}.content[{i}]: only text parts are taken, not "
                                  f"{kind or 'this'}{hint}", "messages")
            if not isinstance(part.get(field), str):
                raise RequestError(f"{where}.content[{i}].{field} must be text", "messages")
            texts.append(part[field])
        # As vLLM and llama.cpp join them: "First paragraph." and "Second paragraph." are
        # two, not "First paragraph.Second paragraph.".
        return "\n".join(texts)
    raise RequestError(f"{where}: content must be text", "messages")


def _model_and_strategy(model: str) -> tuple[str | None, str | None]:
    """`MODEL@STRATEGY` (as /v1/models lists them), or a plain model name; RequestError for
    an `@` with no strategy after it (no model's name ends so: it would reach the model)."""
    name, at, strategy = model.rpartition("@")
    if at and not strategy:
        raise RequestError(f"model {model!r} names no strategy after @: name one (e.g. "
                           f"{name or 'MODEL'}@window) or leave the @ out", "model")
    if at:
        return name or None, strategy
    return model or None, None
