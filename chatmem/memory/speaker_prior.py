"""`retrieval`'s speaker prior: a message whose speaker the input names gains a little.

A group chat's message opens with its speaker's label (`alice: …`, as
chatmem.speakers stores it), and an exported chat log writes a time stamp before it
(`[8 May 2023, 13:56] alice: …`, `(8 May 2023) alice: …`). "What does alice do
at weekends?" is about what alice said; the other speakers' reactions to it
("Wow, that's so cool, alice!") are on topic by words and meaning alike, hold
none of it, and took the room of alice's own messages (benchmarks/recall.py
--dev, id recall at 1,000 / 2,000 / 4,000 tokens: 0.738 / 0.845 / 0.900 without,
see RetrievalParams.speaker for with). A question that names no speaker
changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chatmem.memory.packing import Ranked
from chatmem.speakers import LABEL_COLONS

_COLONS = "".join(sorted(LABEL_COLONS))
_LABEL = re.compile(
    r"\s*(?:[\[(（【][^\])）】\n]{0,40}[\])）】]\s*)?"  # a time stamp, in brackets
    rf"([^\s{_COLONS}\[\](){{}}][^{_COLONS}\n]{{0,63}})[{_COLONS}]")
"""A message's speaker label: up to 64 characters before a colon, after a bracketed stamp."""
OPENING = 120
"""Where a label can end (a stamp and a label at most): nothing past it is read."""
_ANY_COLON = re.compile(f"[{_COLONS}]")
"""Most messages hold no colon where a label would end: one search says so, where the label's
pattern, failing, tried every start of its 64 characters (0.4 ms a build of 150)."""
MOST_WORDS = 4
"""A label of more words is a sentence with a colon ("Here is what I think: …"), not a name."""


def speaker_of(text: str) -> str | None:
    """The speaker label `text` opens with (casefolded), or None."""
    found = _LABEL.match(text, 0, OPENING)
    return None if found is None else _as_label(found.group(1))


def _as_label(written: str) -> str | None:
    """A label as written before its colon, casefolded; None if it cannot be a name."""
    label = written.strip()
    # One letter is no name but a form's: "Q: … A: …", "问：… 答：…", "我：…"; as a label,
    # "a" (or 我) in a question named it, and every answer of a pasted Q&A gained.
    if (len(label) < 2 or len(label.split()) > MOST_WORDS
            or not any(c.isalpha() for c in label)):
        return None
    return label.casefold()


def _spaced(c: str) -> bool:
    """Whether `c` is a letter of a script that spaces its words (a name ends where a word
    does), unlike Chinese, whose names run into the next word (`小明喜欢什么`)."""
    return c.isalnum() and ord(c) < 0x2E80


def names(query: str, label: str) -> bool:
    """Whether `query` names the speaker `label` (casefolded): as a whole word where words
    are spaced, anywhere in Chinese."""
    asked = query.casefold()
    start = asked.find(label)
    while start >= 0:
        end = start + len(label)
        before = asked[start - 1] if start else " "
        after = asked[end] if end < len(asked) else " "
        if not ((_spaced(label[0]) and _spaced(before))
                or (_spaced(label[-1]) and _spaced(after))):
            return True
        start = asked.find(label, start + 1)
    return False


def prefer_named(ranked: Sequence[Ranked], query: str, amount: float) -> list[Ranked]:
    """`ranked` (best first), those whose speaker `query` names (after its own label, if it
    opens with one) `amount` higher in `fused`, best first again (equals keep their order)."""
    if not amount:
        return list(ranked)
    # A group chat's input opens with its own speaker's label: who asks, not who is asked about.
    asker = _LABEL.match(query, 0, OPENING)
    if asker is not None and _as_label(asker.group(1)) is not None:
        query = query[asker.end():]
    # Per label as written: a conversation has a few speakers, and a build 150-300 candidates.
    seen: dict[str, bool] = {}
    gained = False
    for r in ranked:
        if not r.text or _ANY_COLON.search(r.text, 0, OPENING) is None:
            continue
        found = _LABEL.match(r.text, 0, OPENING)
        if found is None:
            continue
        written = found.group(1)
        if written not in seen:
            label = _as_label(written)
            seen[written] = label is not None and names(query, label)
        if seen[written]:
            r.fused += amount
            gained = True
    return sorted(ranked, key=lambda r: -r.fused) if gained else list(ranked)
