"""`scripted`: a deterministic offline model for tests, demos and replays.

Replies come from a script file (one reply per line of text, or JSON Lines
with a "reply" key), then from the rule `echo #<n>: <input>`. Summary and
fact-extraction requests are answered by deterministic rules registered in
`RULES` by purpose, so memory strategies run without a model. When
`log_path` is set, every request is appended to it as one JSON line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

from chatmem.errors import ConfigError
from chatmem.providers import scripted_facts, scripted_summary
from chatmem.providers.base import ChatMessages, Purpose, Usage
from chatmem.tokens import TokenCounter, counter_for_model

RULES: dict[Purpose, Callable[[ChatMessages], str]] = {
    Purpose.SUMMARY: scripted_summary.extractive_summary,
    Purpose.FACTS: scripted_facts.answer,
}
"""Deterministic answers for non-chat purposes (summary, facts), by purpose."""


def read_script(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read reply script: {e.strerror}") from None
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
            with self.log_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")

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

