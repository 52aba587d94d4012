"""A client's copy of a conversation, compared with what a session stores: the same message
when it differs only in what clients change as they show and send a reply back (whitespace
around it or inside it, the reasoning block a model wrote), so a chat that goes on is found
again, and a regenerate is one, whatever the client trimmed."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Protocol

REASONING = re.compile(
    r"<(think|thinking|reasoning)>.*?</\1>|<details\s+type=\"reasoning\"[^>]*>.*?</details>",
    re.DOTALL | re.IGNORECASE)
"""A reasoning block a model writes in its reply (`<think>…</think>`, as R1 and Qwen do, and
chatmem stores as the model wrote it), or as Open WebUI shows one: clients drop it from the
history they send back."""


class Said(Protocol):
    @property
    def role(self) -> str: ...

    @property
    def content(self) -> str: ...


def comparable(role: str, content: str) -> tuple[str, str]:
    """A message as its copies are compared: its role, and its words (every run of
    whitespace one space, none around them; an assistant's reasoning blocks left out)."""
    text = REASONING.sub(" ", content) if role == "assistant" else content
    return role, " ".join(text.split())


def comparable_all(messages: Iterable[Said]) -> list[tuple[str, str]]:
    return [comparable(m.role, m.content) for m in messages]


def history_digest(messages: Iterable[Said]) -> str:
    """What tells one client's history from another's, in the compared form: a server keeps
    it for the turn it answered, not the history itself."""
    text = json.dumps(comparable_all(messages), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
