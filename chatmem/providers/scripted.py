"""`scripted`: a deterministic offline model for tests, demos and replays.

Replies come from a script file (one reply per line of text, or JSON Lines
with a "reply" key), then from the rule `echo #<n>: <input>`. Summary and
fact-extraction requests are answered by deterministic rules registered in
`RULES` by purpose, so memory strategies run without a model. When
`log_path` is set, every request is appended to it as one JSON line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from chatmem.errors import ConfigError
from chatmem.providers import scripted_facts, scripted_summary
from chatmem.providers.base import ChatMessages, Purpose, Usage
from chatmem.text_files import NotUtf8, utf8_text
from chatmem.tokens import TokenCounter, counter_for_model

RULES: dict[Purpose, Callable[[ChatMessages], str]] = {
    Purpose.SUMMARY: scripted_summary.extractive_summary,
    Purpose.FACTS: scripted_facts.answer,
}
"""Deterministic answers for non-chat purposes (summary, facts), by purpose."""


def read_script(path: Path) -> list[str]:
    """The replies of a script file, read as chatmem reads every text file: UTF-8, a
    byte-order mark left out, one line naming the file and line for anything else."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read reply script: {e.strerror}") from None
    text = utf8_text(data)
    if isinstance(text, NotUtf8):
        raise ConfigError(text.said(str(path), "reply script"))
    lines = text.splitlines()
    replies = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            try:
                replies.append(str(json.loads(line)["reply"]))
            except (json.JSONDecodeError, KeyError, TypeError):
                raise ConfigError(
                    f'{path}:{number}: expected {{"reply": "..."}} or a line of text'
                ) from None
        else:
            replies.append(line)
    return replies


def append_to_log(path: Path, data: bytes) -> None:
    """Append to the request log, created readable by its owner only (0600): it holds every
    message sent, as the history file does."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(descriptor, "ab") as f:
            f.write(data)
    except OSError as e:
        raise ConfigError(f"{path}: cannot write the request log: {e.strerror}") from None


class ScriptedReply:
    def __init__(self, text: str, prompt_tokens: int, completion_tokens: int) -> None:
        self._text = text
        self.usage = Usage(prompt_tokens=prompt_tokens)
        self._completion_tokens = completion_tokens
        self.rendered_prompt: str | None = None

    def __iter__(self) -> Iterator[str]:
        # Word-sized deltas, so streaming and Ctrl-C paths are exercised.
        words = self._text.split(" ")
        for i, word in enumerate(words):
            yield word if i == len(words) - 1 else word + " "
        # Counted as the prompt is (exactly, cl100k_base), not as the deltas: a Chinese
        # reply of 44 tokens was reported as 3 chunks, exact.
        self.usage.completion_tokens = self._completion_tokens

    def close(self) -> None:
        pass


class ScriptedProvider:
    name = "scripted"

    def __init__(
        self,
        model: str = "scripted",
        script: Path | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.model = model
        self.replies = read_script(script) if script else []
        self.log_path = log_path
        self.calls = 0
        self.calls_by_purpose: dict[Purpose, int] = {}
        # The scripted model reads text with cl100k_base, so its counts are exact.
        self._counter = counter_for_model(None, exact=True)

    def _log(self, purpose: Purpose, messages: ChatMessages) -> None:
        self.calls_by_purpose[purpose] = self.calls_by_purpose.get(purpose, 0) + 1
        if self.log_path:
            entry = {"purpose": purpose, "messages": [dict(m) for m in messages]}
            append_to_log(self.log_path, (json.dumps(entry, ensure_ascii=False) + "\n").encode())

    def _chat_reply(self, messages: ChatMessages) -> str:
        self.calls += 1
        if self.calls <= len(self.replies):
            return self.replies[self.calls - 1]
        last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        return f"echo #{self.calls}: {last_user}"

    def stream(self, messages: ChatMessages) -> ScriptedReply:
        self._log(Purpose.CHAT, messages)
        text = self._chat_reply(messages)
        return ScriptedReply(text, self._counter.count_messages(messages),
                             self._counter.count_text(text))

    def complete(self, messages: ChatMessages, *, purpose: Purpose = Purpose.CHAT) -> str:
        self._log(purpose, messages)
        rule = RULES.get(purpose)
        if rule is not None:
            return rule(messages)
        return self._chat_reply(messages)

    def token_counter(self) -> TokenCounter:
        return self._counter

    def close(self) -> None:
        pass

