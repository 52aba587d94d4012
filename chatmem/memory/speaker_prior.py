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
from collections import Counter
from collections.abc import Sequence

from chatmem import fts
from chatmem.lazy_patterns import lazy
from chatmem.memory.packing import Ranked
from chatmem.speakers import LABEL_COLONS

_COLONS = "".join(sorted(LABEL_COLONS))
_LABEL = lazy(
    r"\s*(?:[\[(（【][^\])）】\n]{0,40}[\])）】]\s*)?"  # a time stamp, in brackets
    rf"([^\s{_COLONS}\[\](){{}}][^{_COLONS}\n]{{0,63}})[{_COLONS}]")
"""A message's speaker label: up to 64 characters before a colon, after a bracketed stamp."""
OPENING = 120
"""Where a label can end (a stamp and a label at most): nothing past it is read."""
_ANY_COLON = lazy(f"[{_COLONS}]")
"""Most messages hold no colon where a label would end: one search says so, where the label's
pattern, failing, tried every start of its 64 characters (0.4 ms a build of 150)."""
MOST_WORDS = 4
"""A label of more words is a sentence with a colon ("Here is what I think: …"), not a name."""


_APOSTROPHES = str.maketrans(dict.fromkeys("\u2019\u2018\u02bc\u2032", "'"))
"""O’Brien as a phone's keyboard types it is O'Brien."""


def _compared(text: str) -> str:
    """`text` as a label and an input are compared: folded as search folds words (張偉 is
    张伟, José is Jose, ＡＬＩＣＥ is ALICE), apostrophes alike, in any case."""
    return fts.folded(text).translate(_APOSTROPHES).casefold()


def speaker_of(text: str) -> str | None:
    """The speaker label `text` opens with (compared: casefolded, …), or None."""
    written = _written(text)
    return None if written is None else _as_label(written)


def _written(text: str | None) -> str | None:
    """The label `text` opens with, as written before its colon, or None."""
    found = (_LABEL.match(text, 0, OPENING)
             if text and _ANY_COLON.search(text, 0, OPENING) else None)
    return None if found is None else found.group(1)


def _labels_of(ranked: Sequence[Ranked]) -> list[str | None]:
    """`speaker_of` each candidate's text, kept in its `known` (a build reads 150-300, the
    same from turn to turn): with the session's caches, which go when text leaves its memory
    (a purge), not with the process, which would hold any message's opening. One call for
    the pool, not one a candidate: a kept label costs a lookup (~160 calls a build were the
    largest share of a turn's Python calls, benchmarks' retrieval at 1,000 turns)."""
    found: list[str | None] = []
    for r in ranked:
        text, known = r.text, r.known
        if text is None:
            found.append(None)
            continue
        if known is None:
            found.append(speaker_of(text))
            continue
        labels, at = known.labels, (r.key, hash(text))
        if at in labels:
            found.append(labels[at])
            continue
        # Most texts hold no colon to end a label: said here, without speaker_of's two calls
        # (a session's first builds meet 150 new candidates each).
        label = labels[at] = speaker_of(text) if _ANY_COLON.search(text, 0, OPENING) else None
        found.append(label)
    return found


def _as_label(written: str) -> str | None:
    """A label as written before its colon, compared; None if it cannot be a name."""
    label = written.strip()
    # One letter is no name but a form's: "Q: … A: …", "问：… 答：…", "我：…"; as a label,
    # "a" (or 我) in a question named it, and every answer of a pasted Q&A gained.
    if (len(label) < 2 or len(label.split()) > MOST_WORDS
            or not any(c.isalpha() for c in label)):
        return None
    return _compared(label)


def _spaced(c: str) -> bool:
    """Whether `c` is a letter of a script that spaces its words (a name ends where a word
    does), unlike Chinese, whose names run into the next word (`小明喜欢什么`)."""
    return c.isalnum() and ord(c) < 0x2E80


_SPACED = "[^\\W_\u2e80-\U0010ffff]"
"""_spaced as a pattern: a letter or digit (\\w without _) below the CJK blocks."""
_WORDS = lazy(f"{_SPACED}+")


def names(query: str, label: str) -> bool:
    """Whether `query` names the speaker `label` (as speaker_of gives it: two characters
    at least): as a whole word where words are spaced, anywhere in Chinese."""
    asked = _compared(query)
    return _named(asked, set(_WORDS.findall(asked)), label)


def _named(asked: str, words: set[str], label: str) -> bool:
    """names() of an input compared, whose spaced words are `words`. A label's first and
    last words must be words of the input, then one search in C finds where it stands
    apart: trying each place it occurs in Python took a long input (a serve request's body
    is up to 16 MiB) times the labels (4.5 s of a build for 118 labels of a's under a
    question of 100,000 a's)."""
    if label not in asked:  # most labels of a pool: no call for them
        return False
    first, last = _spaced(label[0]), _spaced(label[-1])
    if not (first or last):
        return True
    ends = _WORDS.findall(label)
    if (first and ends[0] not in words) or (last and ends[-1] not in words):
        return False
    # The label's letters first, then what stands before them, so the search looks for the
    # letters as for any word.
    before = f"(?<!{_SPACED}(?s:.){{{len(label)}}})" if first else ""
    after = f"(?!{_SPACED})" if last else ""
    return re.search(re.escape(label) + before + after, asked) is not None


def named_speakers(ranked: Sequence[Ranked], query: str, asker: str | None = None,
                   at_least: int = 1) -> set[str]:
    """The speakers of `ranked` (labels, compared) that `query` names. `asker`: who asked,
    known (a served group chat's `name`), their label already out of `query`; None: a label
    `query` opens with is taken for the asker's when it is a speaker's. `at_least`: how many
    of `ranked` a label must open to count as a speaker's (one line like "Cabin Wi-Fi:
    blue-otter-88." opens with what reads as a label)."""
    labels = _labels_of(ranked)
    speakers = {label for label in labels if label is not None}
    if at_least > 1:
        counts = Counter(labels)
        speakers = {label for label in speakers if counts[label] >= at_least}
    if not speakers:
        return set()
    # A group chat's input opens with its own speaker's label: who asks, not who is asked
    # about. Only a speaker's: "Quick question about Bob: …" is about Bob.
    opening = None if asker else _LABEL.match(query, 0, OPENING)
    if opening is not None and _as_label(opening.group(1)) in speakers:
        query = query[opening.end():]
    asked = _compared(query)
    words = set(_WORDS.findall(asked))
    return {label for label in speakers if _named(asked, words, label)}


def prefer_named(ranked: Sequence[Ranked], query: str, amount: float,
                 asker: str | None = None) -> list[Ranked]:
    """`ranked` (best first), those whose speaker `query` names (named_speakers) `amount`
    higher in `fused`, best first again (equals keep their order)."""
    if not amount:
        return list(ranked)
    named = named_speakers(ranked, query, asker)
    if not named:
        return list(ranked)
    for r, label in zip(ranked, _labels_of(ranked), strict=True):
        if label in named:
            r.fused += amount
    return sorted(ranked, key=lambda r: -r.fused)


def unnamed(query: str, named: set[str]) -> str:
    """`query` with each of the speakers `named` (compared labels) put as a pronoun: "they"
    where words are spaced, 他们 in Chinese; as it was where a name is written otherwise
    than compared (José for jose)."""
    for label in sorted(named, key=len, reverse=True):
        spaced = _spaced(label[0]) or _spaced(label[-1])
        pattern = re.escape(label)
        if spaced:
            pattern = f"(?<!{_SPACED}){pattern}(?:['\u2019]s)?(?!{_SPACED})"
        query = re.sub(pattern, "they" if spaced else "他们", query, flags=re.IGNORECASE)
    return query
