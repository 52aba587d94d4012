"""The reasoning a model writes into its reply text: `<think>…</think>`, as R1, Qwen and the
models served by Ollama and llama.cpp do, or a `<details type="reasoning">` block as Open
WebUI shows one. A chat reply is stored as the model wrote it; what a helper model answers
for memory (a summary, a fact answer) is its text without them."""

from __future__ import annotations

import re

REASONING = re.compile(
    r"<(think|thinking|reasoning)>.*?</\1>|<details\s+type=\"reasoning\"[^>]*>.*?</details>",
    re.DOTALL | re.IGNORECASE)
"""A whole reasoning block."""
_OPENED = re.compile(r"^\s*<(think|thinking|reasoning)>", re.IGNORECASE)
_CLOSED = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)


def without_reasoning(text: str) -> str:
    """`text` without its reasoning blocks. A block left open at the start is all reasoning
    (the reply stopped at its cap mid-thought), and text up to a closing tag no block opened
    is too (a chat template that opens the block itself: Qwen3, DeepSeek-R1)."""
    text = REASONING.sub("", text)
    if _OPENED.match(text):
        return ""
    closed = list(_CLOSED.finditer(text))
    return text[closed[-1].end():] if closed else text
