"""How a secret is looked for in a text: each character read as a key is compared with it
(full-width as ASCII, what shows nothing left out, and for a long token-like key spaces and
tabs too), and the places found replaced by the secret's label (chatmem.privacy.secrets)."""

from __future__ import annotations

import functools
import re

_IGNORED_KINDS = frozenset({"Cf", "Cc", "Zl", "Zp"})
"""Kinds of characters a key is read through: every invisible format character (zero-width
ones, a soft hyphen, direction marks, invisible operators, tags), every control character
but a tab, a line or paragraph separator. A server that echoes the key with one of them in
it, or wrapped over two lines, still shows every character of it."""
_MARKS = frozenset(chr(code) for first, last in ((0x0300, 0x036F), (0x1AB0, 0x1AFF),
                                                 (0x1DC0, 0x1DFF), (0x20D0, 0x20FF),
                                                 (0xFE20, 0xFE2F))
                   for code in range(first, last + 1))
_IGNORED_ALSO = frozenset([chr(0x034F), *map(chr, range(0xFE00, 0xFE10)),
                           *map(chr, range(0xE0100, 0xE01F0)), *_MARKS])
"""Marks of another kind: the combining grapheme joiner, variation selectors (invisible),
and the combining marks a letter carries over it, through it or under it (a key echoed
struck through, `s̶k̶-̶…`, or buried in marks shows every character of it)."""
SPACED_MIN = 20
"""A secret this long that reads as a token (letters and digits, no space) is read through
spaces and tabs too: a key echoed in groups (`sk-t est- SECR…`), a letter at a time, as hex
bytes (`73 6b 2d…`) or split by a tab: every provider's API key is longer. Not a shorter one:
a passphrase's letters run on over a space in ordinary text (`test` in "be[st est]imate",
`thankyousomuch2` in "thank you so much 2 days"); nor words (`mydogisthebest`, `correct
horse battery staple`), which ordinary text spells with spaces."""
_ASCII_IGNORED = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _ignored(character: str) -> bool:
    # isprintable() first: every kind ignored is unprintable, and most characters are
    # printable (a category look-up for each made masking a long Chinese text 1.5x as slow).
    if character.isprintable():
        return character in _IGNORED_ALSO
    import unicodedata

    return character != "\t" and unicodedata.category(character) in _IGNORED_KINDS


def _as_written(text: str, spaceless: bool = False) -> bool:
    """Whether `text` reads as a key is compared with it already (ASCII, nothing ignored)."""
    return text.isascii() and (_ASCII_SPACES if spaceless else _ASCII_IGNORED).search(
        text) is None


_ASCII_SPACES = re.compile(r"[\x00-\x20\x7f]")


class Readings(dict[bool, str]):
    """A text as keys are compared with it (`folded`), with its spaces (False) or without
    (True), each made when first asked for: the second from the first, not read again."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def __missing__(self, spaceless: bool) -> str:
        form = "".join(self[False].split()) if spaceless else folded(self.text)
        self[spaceless] = form
        return form


@functools.lru_cache(maxsize=256)
def key_of(secret: str) -> tuple[bool, str]:
    """Whether `secret` is read through spaces (`SPACED_MIN`), and its form as compared:
    a text's characters folded as a key's are, without the spaces it may begin or end on."""
    read = folded(secret)
    spaceless = (len(read) >= SPACED_MIN and not any(c.isspace() for c in read)
                 and any(c.isdigit() for c in read) and any(c.isalpha() for c in read))
    return spaceless, folded(secret, spaceless).strip()


class _Forms(dict[int, str | None]):
    """Each character's form as a key is compared with it (NFKC'd alone: a full-width key
    reads as the key; None: what `_ignored` leaves out), by code point, as `str.translate`
    reads a table: a served request masks every message of its history, and one `normalize` call
    a character made a 1,000-character Chinese message 3.7 ms a text (0.6 ms a secret)."""

    def __init__(self, spaceless: bool = False) -> None:
        super().__init__()
        self.spaceless = spaceless  # spaces and tabs left out too (`SPACED_MIN`)

    def __missing__(self, code: int) -> str | None:
        import unicodedata

        character = chr(code)
        form = (None if _ignored(character) or (self.spaceless and character.isspace())
                else character if character.isascii()
                else unicodedata.normalize("NFKC", character))
        if form is not None and self.spaceless:  # (NFKC writes U+3000 as a space)
            form = "".join(c for c in form if not c.isspace()) or None
        if len(self) < _FORMS_KEPT:  # (a text of every code point would keep them all)
            self[code] = form
        return form


_FORMS_KEPT = 1 << 16
_FORMS = {False: _Forms(), True: _Forms(spaceless=True)}


def folded(text: str, spaceless: bool = False) -> str:
    """`folded_with_places(text, spaceless)`'s text alone, in one pass in C."""
    if _as_written(text, spaceless):
        return text
    return text.translate(_FORMS[spaceless])


def folded_with_places(text: str, spaceless: bool = False) -> tuple[str, list[int]]:
    """`text` as a key is compared with it (each character NFKC'd alone: a full-width key
    reads as the key; what `_ignored` says left out, and spaces and tabs if `spaceless`),
    and for each character of that the index in `text` of the character it came from."""
    if _as_written(text, spaceless):
        return text, list(range(len(text)))
    forms = _FORMS[spaceless]
    parts: list[str] = []
    places: list[int] = []
    for index, character in enumerate(text):
        form = forms[ord(character)]
        if form:
            parts.append(form)
            places += [index] * len(form)
    return "".join(parts), places


def replaced(text: str, secret: str, label: str) -> tuple[str, bool]:
    """`text` with each of `secret`'s occurrences, as `folded_with_places` reads it, replaced
    by `label` (the characters as written, from its first to its last); whether any was."""
    spaceless, key = key_of(secret)
    if not key:
        return text, False
    if _as_written(text, spaceless):
        return (text.replace(key, label), True) if key in text else (text, False)
    folded, places = folded_with_places(text, spaceless)
    spans: list[tuple[int, int]] = []
    at = folded.find(key)
    while at >= 0:
        start, end = places[at], places[at + len(key) - 1] + 1
        if spans and start < spans[-1][1]:  # both within one character ("㎏" reads "kg")
            start = spans.pop()[0]
        spans.append((start, end))
        at = folded.find(key, at + len(key))
    # Joined once: a copy of the text for each place made a 1 MB reply echoing the key
    # 40,000 times take 9 s to mask.
    pieces, last = [], 0
    for start, end in spans:
        pieces += [text[last:start], label]
        last = end
    return "".join([*pieces, text[last:]]), bool(spans)
