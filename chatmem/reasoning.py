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
_LEADING = re.compile(rf"\s*(?:{REASONING.pattern})", re.DOTALL | re.IGNORECASE)
_OPENED = re.compile(r"^\s*<(think|thinking|reasoning)>", re.IGNORECASE)
_CLOSED = re.compile(r"</(?:think|thinking|reasoning)>[ \t]*\r?\n", re.IGNORECASE)
"""A closing tag ending its line, as a template-opened block ends ("…\\n</think>\\n\\n")."""


def without_reasoning(text: str) -> str:
    """`text` without the reasoning blocks it begins with. A block left open at the start is
    all reasoning (the reply stopped at its cap mid-thought), and text up to the first
    closing tag that ends a line, no block opened, is too (a chat template that opens the
    block itself: Qwen3, DeepSeek-R1). Reasoning comes first: a tag further in, or one
    inside a line, is the text talking about tags ("replies end with </think>"), and
    taken as reasoning it dropped all a summary said before it."""
    while (block := _LEADING.match(text)) is not None:
        text = text[block.end():]
    if _OPENED.match(text):
        return ""
    closed = _CLOSED.search(text)
    return text[closed.end():] if closed else text
