"""How fact keys compare, for the store that keeps one live fact per key and owner and for
the memory that looks keys up: one rule, so a key typed `café` with its é composed or not,
`STRASSE` for `straße`, `Ｅｍａｉｌ` as an input method types it for `email`, or `車牌號` for
`车牌号`, is one key everywhere."""

from __future__ import annotations

import unicodedata
from functools import cache

from chatmem.text import FULL_WIDTH


def normalize_key(key: str) -> str:
    """The form a key is stored and shown in: NFC, its runs of spaces as one, lower case
    ('Order  ID' is 'order id'; ß stays ß, as the user typed it). Turkish İ is i, not the
    i with a stray dot above (U+0307) that str.lower makes of it (ŞEHİR is şehir)."""
    return " ".join(unicodedata.normalize("NFC", key).split()).replace("\u0130", "i").lower()


def key_identity(key: str) -> str:
    """What two keys compare by: Unicode's canonical caseless match (case folded, in one
    normal form), so café/café and Straße/STRASSE are the same key; with full-width ASCII
    as ASCII and traditional Chinese as simplified (`_variants`), and Turkish dotless ı as
    i, as a purge reads it (şehir, ŞEHİR and şehır: people type on the keyboard they have;
    a key stored with U+0307 on its i before normalize_key dropped it too)."""
    folded = unicodedata.normalize("NFD", normalize_key(key).translate(_variants())).casefold()
    return unicodedata.normalize("NFC", folded.replace("i\u0307", "i"))


@cache
def _variants() -> dict[int, int]:
    """Full-width ASCII (text.FULL_WIDTH), and the traditional Chinese characters simplified
    text never writes as themselves as simplified ones (a purge's fold, not search's wider
    one): a key names a person at times, and 於先生 is not 于先生, as 車牌號 is 车牌号. Turkish
    dotless ı as i."""
    from chatmem.chinese_variants import solely_traditional  # a large table, as fts loads it

    return {**FULL_WIDTH, **solely_traditional(), ord("\u0131"): ord("i")}


@cache
def _variants_of() -> dict[str, str]:
    """A character of a key identity → the characters `_variants` folds to it."""
    variants: dict[str, str] = {}
    for code in _variants():
        identity = key_identity(chr(code))
        variants[identity] = variants.get(identity, "") + chr(code)
    return variants


def variant_letters(key: str) -> str:
    """The characters a key the same as `key` may hold in place of one of its own (ｅ for e,
    車 for 车), none of them ASCII: a lookup by value reads the owner's keys holding one,
    as spelling every mix of them out would take 2ⁿ forms."""
    variants = _variants_of()
    identity = key_identity(key)
    stray_dot = "\u0307" if "i" in identity else ""  # şehi̇r, as normalize_key once stored it
    return "".join(sorted({letter for character in set(identity)
                           for letter in variants.get(character, "")})) + stray_dot


def same_key(first: str, second: str) -> bool:
    return key_identity(first) == key_identity(second)


_FOLDING_APART = (("\xb5", "\xb5"), ("\xdf", "\xdf"), ("\u0149", "\u0149"), ("\u017f", "\u017f"),
                  ("\u0345", "\u0345"), ("\u03c2", "\u03c2"), ("\u03d0", "\u03d1"),
                  ("\u03d5", "\u03d6"), ("\u03f0", "\u03f1"), ("\u03f5", "\u03f5"),
                  ("\u0587", "\u0587"), ("\u1c80", "\u1c88"), ("\u1e9a", "\u1e9b"),
                  ("\u1f80", "\u1f87"), ("\u1f90", "\u1f97"), ("\u1fa0", "\u1fa7"),
                  ("\u1fb2", "\u1fb4"), ("\u1fb7", "\u1fb7"), ("\u1fc2", "\u1fc4"),
                  ("\u1fc7", "\u1fc7"), ("\u1ff2", "\u1ff4"), ("\u1ff7", "\u1ff7"),
                  ("\ufb00", "\ufb06"), ("\ufb13", "\ufb17"))
FOLDING_APART = "".join(chr(c) for first, last in _FOLDING_APART
                        for c in range(ord(first), ord(last) + 1))
"""The lower-case letters whose case folding is another letter (ß is ss, ς is σ, ﬁ is fi):
a key the same as one holding them may be spelled without them (STRASSE), so their runs
are spelled both ways when a key is looked up by value."""


MOST_FORMS = 64
"""Spellings of a key looked up by value; a key with more (many s, each maybe ſ) is looked
for among every stored key holding a FOLDING_APART letter instead."""


def stored_forms(key: str) -> list[str] | None:
    """Every form a key the same as `key` may be stored in: NFC now, and before keys were
    normalized lower case as typed, composed or not; with each run of letters a
    FOLDING_APART letter folds to spelled as that letter too (strasse as straße). None
    when there are more than MOST_FORMS."""
    spellings = _spellings(key_identity(key))
    return None if spellings is None else _forms(key, spellings)


def plain_forms(key: str) -> list[str]:
    """stored_forms but for the spellings with a FOLDING_APART letter."""
    return _forms(key, {key_identity(key)})


def _forms(key: str, spellings: set[str]) -> list[str]:
    forms = {normalize_key(key)} | {unicodedata.normalize(form, text).lower()
                                    for text in spellings for form in ("NFC", "NFD")}
    forms |= {unicodedata.normalize("NFD", text) for text in list(forms)}
    return sorted(forms)


def _spellings(identity: str) -> set[str] | None:
    ends: dict[int, set[str]] = {0: {""}}
    for start in range(len(identity)):
        if start not in ends:
            continue
        for run, letters in [(identity[start], [identity[start]]),
                             *((run, letters) for run, letters in _FOLDED.items()
                               if identity.startswith(run, start))]:
            ends.setdefault(start + len(run), set()).update(
                head + letter for head in ends[start] for letter in letters)
            if len(ends[start + len(run)]) > MOST_FORMS:
                return None
    return ends.get(len(identity), {identity})


_FOLDED: dict[str, list[str]] = {}
for _letter in FOLDING_APART:
    _FOLDED.setdefault(key_identity(_letter) if _letter.strip() else _letter, []).append(
        _letter)
