"""The reasoning a model writes into its reply text: `<think>…</think>`, as R1, Qwen and the
models served by Ollama and llama.cpp do, or a `<details type="reasoning">` block as Open
WebUI shows one. A chat reply is stored as the model wrote it; what a helper model answers
for memory (a summary, a fact answer) is its text without them."""

from __future__ import annotations

import re

from chatmem.lazy_patterns import lazy

REASONING = lazy(
    r"<(think|thinking|reasoning)>.*?</\1>|<details\s+type=\"reasoning\"[^>]*>.*?</details>",
    re.DOTALL | re.IGNORECASE)
"""A whole reasoning block: a reply's leading ones are left out by it (without_reasoning);
blocks_replaced finds the same blocks anywhere, in one pass (tests/test_reasoning.py)."""
_OPENING = lazy(r"<(think|thinking|reasoning)>|<details\s+type=\"reasoning\"[^>]*>",
                      re.IGNORECASE)
_CLOSING = {name: lazy(f"</{name}>", re.IGNORECASE)
            for name in ("think", "thinking", "reasoning", "details")}
_LEADING = lazy(rf"\s*(?:{REASONING.pattern})", re.DOTALL | re.IGNORECASE)
_OPENED = lazy(r"^\s*<(think|thinking|reasoning)>", re.IGNORECASE)
_CLOSED = lazy(r"</(?:think|thinking|reasoning)>[ \t]*\r?\n", re.IGNORECASE)
"""A closing tag ending its line, as a template-opened block ends ("…\\n</think>\\n\\n")."""


def without_reasoning(text: str) -> str:
    """`text` without the reasoning blocks it begins with. A block left open at the start is
    all reasoning (the reply stopped at its cap mid-thought), and text up to the first
    closing tag that ends a line, no block opened, is too (a chat template that opens the
    block itself: Qwen3, DeepSeek-R1). Reasoning comes first: a tag further in, or one
    inside a line, is the text talking about tags ("replies end with </think>"), and
    taken as reasoning it dropped all a summary said before it."""
    # Read on from each block's end, the text cut once: a copy of the rest after each block
    # made a 4.8 MB reply of `<think></think>` blocks take 39 s (quadratic).
    at = 0
    while (block := _LEADING.match(text, at)) is not None:
        at = block.end()
    text = text[at:]
    if _OPENED.match(text):
        return ""
    closed = _CLOSED.search(text)
    return text[closed.end():] if closed else text


def sent_reply(content: str) -> str:
    """A stored reply as a context sends it and the word index holds it: without the
    reasoning it opens with. All of it reasoning (a reply cut mid-thought), it is sent as it
    is: an empty assistant message is refused by some APIs."""
    if "<" not in content:  # no tag, no reasoning: most replies
        return content
    return without_reasoning(content).lstrip() or content


_TAGS = lazy(r"</?(?:think|thinking|reasoning)>|<details\s+type=\"reasoning\"[^>]*>"
                   r"|</details>", re.IGNORECASE)


def reasoning_and_reply(text: str) -> tuple[str, str]:
    """The reasoning `text` begins with (`without_reasoning`'s), without its tags, and the
    rest: what a reader is shown apart ("" and `text` when it opens with none)."""
    rest = without_reasoning(text)
    if rest == text or not text.endswith(rest):
        return "", text
    return _TAGS.sub("", text[:len(text) - len(rest)]).strip(), rest.lstrip()


def blocks_replaced(text: str, by: str) -> str:
    """`text` with each whole reasoning block, wherever it stands, replaced `by`: as
    REASONING.sub, in one pass. The pattern, for each tag no closing tag follows, read on to
    the text's end: 20,000 `<think>` in an assistant message a client sent took serve 28 s
    of CPU (quadratic; a 16 MiB body, hours)."""
    kept, done, at = [], 0, 0
    unclosed: set[str] = set()  # no closing tag after a later opening either
    # Every opening tag ends with a ">": none begins past the last one. Looked for there
    # too, `<details type="reasoning"` with no ">" after it read on to the text's end each
    # time (20,000 in a client's message: 9.8 s).
    end = text.rfind(">") + 1
    while (opening := _OPENING.search(text, at, end)) is not None:
        name = (opening.group(1) or "details").lower()
        closing = None if name in unclosed else _CLOSING[name].search(text, opening.end())
        if closing is None:
            unclosed.add(name)
            at = opening.end()
            continue
        kept += [text[done:opening.start()], by]
        done = at = closing.end()
    return "".join([*kept, text[done:]])
