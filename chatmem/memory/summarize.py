"""The summarizer: existing summary + new lines → new summary, in one model call.

The prompt is incremental (LangChain's summary memory re-reads only the new
lines too), asks for numbers, ids, dates, names and URLs verbatim and for the
conversation's own language, and can be replaced in the config as long as it
keeps both placeholders. A reply longer than `max_tokens` is clipped with a
visible marker, never silently. Word diffs between versions live here too,
so a strategy can report a diff's size without depending on the renderer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chatmem.errors import ConfigError, ProviderResponseError
from chatmem.memory.base import Message
from chatmem.tokens import TokenCounter

if TYPE_CHECKING:
    from chatmem.providers.base import Provider

SUMMARY_SLOT = "{summary}"
LINES_SLOT = "{new_lines}"
NO_SUMMARY = "(no summary yet)"

DEFAULT_PROMPT = f"""You keep a running summary of a conversation between a user and an assistant.
Rewrite the current summary so that it also covers the new lines, in at most a few sentences.
Keep every number, amount, id, date, name, email address and URL exactly as written.
Write the summary in the language the conversation is in. Reply with the summary only.

Current summary:
{SUMMARY_SLOT}

New lines:
{LINES_SLOT}
"""


def check_prompt(prompt: str, where: str = "summary.prompt") -> str:
    """The prompt itself, or ConfigError naming what is missing."""
    missing = [slot for slot in (SUMMARY_SLOT, LINES_SLOT) if slot not in prompt]
    if missing:
        raise ConfigError(
            f"{where}: the summary prompt must contain {SUMMARY_SLOT} and {LINES_SLOT}"
            f" (missing {' and '.join(missing)})"
        )
    return prompt


def format_lines(messages: Sequence[Message]) -> str:
    """One `role: text` line per message; inner newlines folded so lines stay lines."""
    return "\n".join(f"{m.role}: {' '.join(m.content.split())}" for m in messages)


def summary_request(
    prompt: str, previous: str, messages: Sequence[Message]
) -> list[dict[str, str]]:
    # str.replace, not str.format: a user's prompt may contain other braces.
    text = prompt.replace(SUMMARY_SLOT, previous or NO_SUMMARY)
    text = text.replace(LINES_SLOT, format_lines(messages))
    return [{"role": "user", "content": text}]


def clip_marker(max_tokens: int) -> str:
    return f" […clipped to {max_tokens} tokens]"


def clip(text: str, max_tokens: int, counter: TokenCounter) -> tuple[str, bool]:
    """`text`, or its longest prefix that fits `max_tokens` with the marker appended."""
    if counter.count_text(text) <= max_tokens:
        return text, False
    marker = clip_marker(max_tokens)
    low, high = 0, len(text)
    while low < high:  # the longest prefix whose clipped form fits
        mid = (low + high + 1) // 2
        if counter.count_text(text[:mid].rstrip() + marker) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return text[:low].rstrip() + marker, True


@dataclass(frozen=True)
class Draft:
    text: str
    clipped: bool
    model: str | None


def summarize(
    model: Provider,
    counter: TokenCounter,
    previous: str,
    messages: Sequence[Message],
    *,
    prompt: str = DEFAULT_PROMPT,
    max_tokens: int | None = None,
) -> Draft:
    """Fold `messages` into `previous` with exactly one call to `model`.

    Raises the provider's error, or ProviderResponseError for an empty reply:
    an empty summary would silently erase everything summarized so far.
    """
    reply = model.complete(summary_request(prompt, previous, messages), purpose="summary")
    text = (reply or "").strip()
    if not text:
        raise ProviderResponseError("the summarizer returned an empty summary")
    clipped = False
    if max_tokens is not None:
        text, clipped = clip(text, max_tokens, counter)
    label = f"{model.name}:{model.model}" if model.name and model.model else (
        model.model or model.name or None)
    return Draft(text, clipped, label)


# -- word diffs ---------------------------------------------------------------

_CJK = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
    "\U00020000-\U0002fa1f"
)
# CJK text has no spaces: each character is a "word", so one changed amount in a
# Chinese line shows as a few characters, not the whole line. Latin words keep
# inner joiners, so ORD-7731, 2026-05-01 and a@b.com change as one word.
_WORD = rf"[^\W{_CJK}]+"
_DIFF_TOKEN = re.compile(rf"[{_CJK}]|{_WORD}(?:[-./@]{_WORD})*|\s+|[^\w\s]")


def diff_tokens(text: str) -> list[str]:
    return _DIFF_TOKEN.findall(text)


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """(op, text) runs: "=" kept, "-" removed, "+" added; concatenating = and + gives `new`."""
    from difflib import SequenceMatcher

    a, b = diff_tokens(old), diff_tokens(new)
    runs: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            runs.append(("=", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            runs.append(("-", "".join(a[i1:i2])))
        if j2 > j1:
            runs.append(("+", "".join(b[j1:j2])))
    return runs


def diff_unit(old: str, new: str) -> str:
    """What diff_size counts: "characters" when the changes are mostly CJK, else "words"."""
    changed = "".join(run for op, run in word_diff(old, new) if op != "=")
    tokens = [t for t in diff_tokens(changed) if any(c.isalnum() for c in t)]
    cjk = sum(1 for t in tokens if re.fullmatch(f"[{_CJK}]", t))
    return "characters" if cjk * 2 > len(tokens) else "words"


def diff_size(old: str, new: str) -> tuple[int, int]:
    """Words (CJK characters) added and removed from `old` to `new`."""
    added = removed = 0
    for op, text in word_diff(old, new):
        words = sum(1 for t in diff_tokens(text) if any(c.isalnum() for c in t))
        if op == "+":
            added += words
        elif op == "-":
            removed += words
    return added, removed
