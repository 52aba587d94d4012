"""Reading the word lists of chatmem.privacy.secret_names as texts: what they spell, and
which words a text must hold before a pattern built on them can match it.

The guard reads every new message, the summarizer's every summary: most hold no credential
name at all, and a pattern led by a long alternation of words, matched case-insensitively,
is tried at every position of them. A plain substring test of the lowered text rules such a
pattern out at the cost of a few memory scans.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import cache
from typing import TypeVar

T = TypeVar("T")

READ_AS_ASCII = frozenset("\u0130\u0131\u017f\u212a")
"""The letters IGNORECASE matches to ASCII ones (İ, ı, ſ, the Kelvin sign)."""


def spelled(words: str) -> set[str]:
    """Every text a word list spells: its alternatives with their optional letters
    ("wi-?fi") and optional groups ("(?:front |back )?door") written out (the lists are
    regular expressions of that much syntax, and finite)."""

    def alternatives(at: int) -> tuple[set[str], int]:
        found: set[str] = set()
        while True:
            texts, at = sequence(at)
            found |= texts
            if at < len(words) and words[at] == "|":
                at += 1
                continue
            return found, at

    def sequence(at: int) -> tuple[set[str], int]:
        texts = {""}
        while at < len(words) and words[at] not in "|)":
            if words.startswith("(?:", at):
                part, at = alternatives(at + 3)
                at += 1  # the group's ")"
            else:
                part, at = {words[at]}, at + 1
            if at < len(words) and words[at] == "?":
                part, at = part | {""}, at + 1
            texts = {a + b for a in texts for b in part}
        return texts, at

    return alternatives(0)[0]


def _literal_runs(text: str) -> list[str]:
    """The runs of letters (of any script) `text`, a spelled text, holds literally: not
    in a class ("[ -]"), not escaped ("\\s"), not under a quantifier that lets one go."""
    runs, run, at = [], "", 0
    while at < len(text):
        char = text[at]
        if char == "[":
            closing = text.find("]", at + 1)
            at = len(text) if closing < 0 else closing + 1
        elif char == "\\":
            at += 2
        elif char.isalpha():
            if text[at + 1:at + 2] in ("*", "{"):
                at += 1  # "x*", "x{0,2}": this letter may be missing
            else:
                run += char
                at += 1
                continue
        else:
            at += 1
        runs.append(run)
        run = ""
    return [*runs, run]


def needed_words(words: str) -> frozenset[str]:
    """A word for each text of a word list (the longest run of letters it holds literally,
    lowered): one of these is in the lowered copy of any text a pattern built on the list
    matches, unless the text holds a letter IGNORECASE reads as ASCII (see lowered_text).

    A text without a letter gives "", which every text holds: the list then rules nothing
    out, which is always safe.
    """
    needed: set[str] = set()
    # The fewest runs first: "card number" is covered by "card" before "number" is chosen.
    for runs in sorted((_literal_runs(text) for text in spelled(words.lower())), key=len):
        if not any(word in run for run in runs for word in needed):
            needed.add(max(runs, key=len))
    # "door" is in every text "front door" is in: the shorter is enough to test.
    return frozenset(word for word in needed
                     if not any(other != word and other in word for other in needed))


@cache
def _needed(words: str) -> tuple[str, ...]:
    return tuple(sorted(needed_words(words), key=len))


class WordGate:
    """Whether a pattern built on some word lists may match a text: each list must have a
    word in its lowered copy."""

    __slots__ = ("_needs",)

    def __init__(self, *lists: str) -> None:
        self._needs = sorted((_needed(words) for words in lists), key=len)

    def admits(self, lowered: str | None, held: dict[tuple[str, ...], bool]) -> bool:
        """Whether the pattern may match the text `lowered` is the lowered copy of (None
        for a text no substring test rules out: see lowered_text); `held` keeps, for one
        text, which lists it holds a word of, for the next gate asking."""
        if lowered is None:
            return True
        for needed in self._needs:
            found = held.get(needed)
            if found is None:
                found = held[needed] = any(word in lowered for word in needed)
            if not found:
                return False
        return True


def lowered_text(text: str) -> str | None:
    """`text` lowered, for the gates; None for a text holding a letter IGNORECASE matches
    to an ASCII one (İ, ı, ſ, the Kelvin sign): no word can be ruled out of it by a
    substring test. Every other letter matches a list's letter only if it lowers to it."""
    if not text.isascii() and READ_AS_ASCII.intersection(text):
        return None
    return text.lower()


def gated(patterns: Iterable[tuple[re.Pattern[str], WordGate, T]],
          text: str) -> Iterator[tuple[re.Pattern[str], T, Iterator[re.Match[str]]]]:
    """Each pattern's own value and its finditer over `text`, for the patterns their gates
    admit."""
    lowered, held = lowered_text(text), dict[tuple[str, ...], bool]()
    for pattern, gate, value in patterns:
        if gate.admits(lowered, held):
            yield pattern, value, pattern.finditer(text)
