"""The scripted provider's deterministic summary rule: extractive, offline.

It reads the summary request the summarizer sends (any prompt with the two
placeholders): lines starting "- " are the previous summary's points, lines
"user: ..." are new user messages. Each new user message contributes its
first sentence, verbatim, as a point; the newest MAX_POINTS points are kept.
Verbatim extraction keeps ids and amounts intact, and dropping the oldest
points is exactly the kind of loss the drift guard must catch.
"""

from __future__ import annotations

import re

from chatmem.providers.base import ChatMessages

MAX_POINTS = 8
MAX_WORDS = 24
MAX_CJK_CHARS = 60
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|(?<=[。！？])")


def first_sentence(text: str) -> str:
    sentence = _SENTENCE_END.split(text.strip(), maxsplit=1)[0].strip()
    words = sentence.split()
    if len(words) > MAX_WORDS:
        sentence = " ".join(words[:MAX_WORDS]) + " …"
    elif len(words) <= 2 and len(sentence) > MAX_CJK_CHARS:
        sentence = sentence[:MAX_CJK_CHARS] + "…"
    return sentence


def extractive_summary(messages: ChatMessages) -> str:
    request = messages[-1]["content"] if messages else ""
    points: list[str] = []
    users: list[str] = []
    for line in request.splitlines():
        if users and line.startswith("  "):
            # A message's further lines (a code block) are indented: its first sentence
            # is read as before, over the whole message.
            users[-1] += " " + " ".join(line.split())
            continue
        if users:
            points.append(first_sentence(users.pop()))
        if line.startswith("- "):
            points.append(line[2:].strip())
        elif line.startswith("user: ") and line[6:].strip():
            users.append(line[6:])
    points.extend(first_sentence(u) for u in users)
    kept = list(dict.fromkeys(p for p in points if p))[-MAX_POINTS:]
    return "\n".join(f"- {p}" for p in kept)
