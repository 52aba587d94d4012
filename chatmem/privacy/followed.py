"""Where the values a secret guard follows are said again: all of them found in one reading
of a text, however many the guard knows.

A pattern for each value made a text of N card numbers cost N readings of it, and the guard
of every later fold read that text again. Instead:

- a number ("4487 5749 1186 2520", "+1 (415) 555-0100") is kept as its digits: a text's
  runs of digit groups (joined by at most one space, dash or bracket) are cut into every
  stretch of whole groups as long as a known number, and looked up by their digits;
- any other value goes into a trie, spelt as one pattern that finds, at each position, the
  longest value said there. It is matched against the text with each letter folded to one
  of those case-insensitive matching reads as the same (İ, ı, I and i as i): as many
  characters as the text, so positions are the text's, and a pattern with no
  case-insensitive letter sets in it, which re compiles slowly. The last few values learnt
  are looked for one by one; then they go into a new pattern, merged with the one before it
  once it is as large, so each value is compiled O(log n) times as a conversation's values
  grow; a pattern is cached by its values, so the next fold's guard, learning the same
  values in the same order, compiles none.

A value is found wherever it recurs, overlapping occurrences of itself included: the guard
merges overlapping findings into one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from chatmem.privacy.findings import Finding
from chatmem.text_caches import text_cache

_NUMBER = re.compile(r"[\d\s()+-]+")
_DIGIT_GROUPS = re.compile(r"\d+(?:[\s()+-]\d+)*")
_DIGITS = re.compile(r"\d+")
_NOT_DIGIT = re.compile(r"\D")
# A value that starts or ends with an ASCII letter or digit is found only as a whole word.
# In folded text the letters case-insensitive matching reads as ASCII ones (ſ, K) are ASCII.
_WORD_BEFORE, _WORD_AFTER = r"(?<![a-z0-9])", r"(?![a-z0-9])"
_UNCOMPILED = 32
"""Values learnt last that are looked for one by one (a substring search each) before they
are compiled into a pattern: a pattern costs far more to compile than to match."""
_NESTING = 200
"""Deepest trie spelt as nested groups: a deeper one (values that are prefixes of each
other, hundreds deep) is spelt as a flat alternation, which the regex parser can nest."""

_Entry = tuple[str, bool, bool]
"""A value folded, and whether it must start and whether it must end a word."""
_Trie = dict[str, "_Trie"]
"""A letter → the values that go on with it; _ENDS / _ENDS_WORD → {} where a value ends
(one that need not / must end a word)."""
_ENDS, _ENDS_WORD = "\0\0", "\0w"


@dataclass
class Followed:
    """The values a guard follows, each with its kind (the first learnt for the same text)."""

    count: int = 0
    """Values added: the guard compares it with what it knows."""
    _numbers: dict[str, str] = field(default_factory=dict)
    _lengths: set[int] = field(default_factory=set)
    _spellings: dict[str, list[tuple[str, bool, bool]]] = field(default_factory=dict)
    """A value folded → the kind of each value folded so, with its word edges."""
    _blocks: list[tuple[tuple[_Entry, ...], re.Pattern[str]]] = field(default_factory=list)
    _pending: list[_Entry] = field(default_factory=list)

    def add(self, value: str, kind: str) -> None:
        self.count += 1
        digits = _NOT_DIGIT.sub("", value)
        if digits and _NUMBER.fullmatch(value):
            if digits not in self._numbers:
                self._numbers[digits] = kind
                self._lengths.add(len(digits))
            return
        spelling, edges = folded(value), (_is_alnum(value[0]), _is_alnum(value[-1]))
        same = self._spellings.setdefault(spelling, [])
        if all(edges != (before, after) for _, before, after in same):
            same.append((kind, *edges))
            self._pending.append((spelling, *edges))

    def findings(self, text: str) -> Iterator[Finding]:
        """Every occurrence in `text` of a value added (at each position, the longest)."""
        if self._numbers and any(c.isdigit() for c in text):
            yield from self._numbers_in(text)
        if len(self._pending) >= _UNCOMPILED:
            entries = tuple(self._pending)
            self._pending = []
            while self._blocks and len(self._blocks[-1][0]) <= len(entries):
                entries = self._blocks.pop()[0] + entries
            # (the pattern is kept with its block: a cache lookup hashes every value)
            self._blocks.append((entries, _pattern(entries)))
        if not self._blocks and not self._pending:
            return
        lowered = folded(text)
        for _, pattern in self._blocks:
            for match in pattern.finditer(lowered):
                start, end = match.start(), match.start() + len(match.group(1))
                yield Finding(self._kind_of(lowered, start, end), start, end, text[start:end])
        for spelling, before, after in self._pending:
            start = lowered.find(spelling)
            while start >= 0:
                end = start + len(spelling)
                if _fits(lowered, start, end, before, after):
                    yield Finding(self._kind_of(lowered, start, end), start, end,
                                  text[start:end])
                start = lowered.find(spelling, start + 1)

    def _numbers_in(self, text: str) -> Iterator[Finding]:
        lengths = sorted(self._lengths)
        for run in _DIGIT_GROUPS.finditer(text):
            digits, starts, ends = [], [], {}
            at = 0
            for group in _DIGITS.finditer(text, run.start(), run.end()):
                digits.append(group.group())
                starts.append((at, group.start()))
                at += group.end() - group.start()
                ends[at] = group.end()
            spelled = "".join(digits)
            for first, start in starts:
                for length in lengths:
                    end = ends.get(first + length)
                    if end is None:
                        continue
                    kind = self._numbers.get(spelled[first:first + length])
                    if kind is not None:
                        yield Finding(kind, start, end, text[start:end])

    def _kind_of(self, lowered: str, start: int, end: int) -> str:
        """The kind of the first value learnt of those said from `start` to `end` (of the
        folded text) whose word edges hold there."""
        same = self._spellings[lowered[start:end]]
        return next((kind for kind, before, after in same
                     if _fits(lowered, start, end, before, after)), same[0][0])


def _fits(lowered: str, start: int, end: int, before: bool, after: bool) -> bool:
    """Whether a value said from `start` to `end` of a folded text starts a word there if
    it must (`before`) and ends one if it must (`after`)."""
    return (not (before and start > 0 and _is_alnum(lowered[start - 1]))
            and not (after and end < len(lowered) and _is_alnum(lowered[end])))


class _Letters(dict[int, str]):
    """Each character → the one letter of all those case-insensitive matching reads as the
    same (k, K and the Kelvin sign; s, S and ſ; i, I, ı and İ), worked out when first met."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if char == "\u0130":  # İ: two characters lowercased, but read as i
            letter = "i"
        else:
            upper = char.upper()
            upper = upper if len(upper) == 1 else char
            lower = upper.lower()
            letter = lower if len(lower) == 1 else upper
        self[code] = letter
        return letter


_LETTERS = _Letters()


def folded(text: str) -> str:
    """`text` with each character the letter of its case-insensitive kin: as long as it."""
    return text.lower() if text.isascii() else text.translate(_LETTERS)


@text_cache(maxsize=256)
def _pattern(entries: tuple[_Entry, ...]) -> re.Pattern[str]:
    """At each position of a folded text, the longest of the values of `entries` said
    there, in group 1."""
    every: _Trie = {}
    loose: _Trie = {}
    """The values that need not start a word: all that a position after a letter holds."""
    for spelling, before, after in entries:
        for trie in (every,) if before else (every, loose):
            node = trie
            for char in spelling:
                node = node.setdefault(char, {})
            node[_ENDS_WORD if after else _ENDS] = {}
    try:
        branches = []
        for char, node in every.items():
            first = re.escape(char)
            if node == loose.get(char):
                branches.append(first + _spelt(node, 1))
                continue
            branches.append(_WORD_BEFORE + first + _spelt(node, 1))
            if char in loose:
                branches.append(first + _spelt(loose[char], 1))
        return re.compile(f"(?=((?:{'|'.join(branches)})))")
    except (RecursionError, re.error):
        flat = sorted(entries, key=lambda entry: len(entry[0]), reverse=True)
        body = "|".join((_WORD_BEFORE if before else "") + re.escape(spelling)
                        + (_WORD_AFTER if after else "") for spelling, before, after in flat)
        return re.compile(f"(?=((?:{body})))")


def _spelt(node: _Trie, depth: int) -> str:
    """The pattern of the values that go on from `node`, longer ones first: the first that
    matches is the longest (a node's letters are different characters: one goes on)."""
    if depth > _NESTING:
        raise RecursionError
    run = ""
    while len(node) == 1 and _ENDS not in node and _ENDS_WORD not in node:
        ((char, node),) = node.items()  # one way on: no group needed
        run += re.escape(char)
    branches = [re.escape(char) + _spelt(child, depth + 1)
                for char, child in node.items() if char not in (_ENDS, _ENDS_WORD)]
    if _ENDS in node:
        branches.append("")
    elif _ENDS_WORD in node:
        branches.append(_WORD_AFTER)
    if len(branches) == 1:
        return run + branches[0]
    return f"{run}(?:{'|'.join(branches)})"


def _is_alnum(char: str) -> bool:
    return char.isascii() and char.isalnum()
