"""How fact keys compare, for the store that keeps one live fact per key and owner and for
the memory that looks keys up: one rule, so a key typed `café` with its é composed or not,
or `STRASSE` for `straße`, is one key everywhere."""

from __future__ import annotations

import unicodedata


def normalize_key(key: str) -> str:
    """The form a key is stored and shown in: NFC, its runs of spaces as one, lower case
    ('Order  ID' is 'order id'; ß stays ß, as the user typed it)."""
    return " ".join(unicodedata.normalize("NFC", key).split()).lower()


def key_identity(key: str) -> str:
    """What two keys compare by: Unicode's canonical caseless match (case folded, in one
    normal form), so café/café and Straße/STRASSE are the same key."""
    folded = unicodedata.normalize("NFD", normalize_key(key)).casefold()
    return unicodedata.normalize("NFC", folded)


def same_key(first: str, second: str) -> bool:
    return key_identity(first) == key_identity(second)
