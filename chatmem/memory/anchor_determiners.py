"""Whether a capitalised word follows a determiner, so is a noun rather than a name.

English: "the Customer" is a document's defined term. German and Luxembourgish capitalise
every noun: one after an article, a count or a contraction (die Lieferung, drei Wochen,
beim Zahnarzt, pro Nacht, d'Rechnung), adjectives between or not (die neue Wohnung), is no
name. Read as words, not a pattern: a pattern tried at every place of the window before
each capitalised word cost the drift guard a tenth of its time.
"""

from __future__ import annotations

from chatmem.memory.anchor_words import NOUN_MARKERS

# Not "a": "venga a Madrid" is Spanish for "come to Madrid".
_ENGLISH = frozenset(["the", "this", "these", "those", "each", "every", "any", "our", "your",
                      "their", "its", "my", "such"])
_NOUN_MARKERS = frozenset(NOUN_MARKERS.split())
_ELIDED = ("d'", "D'", "d’", "D’")
_ADJECTIVES = 2
"""How many lowercase words may stand between a German article and its noun."""


def _marks_a_noun(words: list[str], back: int) -> bool:
    word = words[-back]
    if word != "am":
        return word in _NOUN_MARKERS
    # am Bahnhof, but not "I am Bob" nor "9 am Bob".
    before = words[-back - 1] if back < len(words) else ""
    return before not in ("I", "i") and not before[-1:].isdigit()


def after_determiner(text: str, start: int, look: int) -> bool:
    """Whether the word at `start` follows a determiner within `look` characters."""
    if text[start - 2:start] in _ELIDED and not text[start - 3:start - 2].isalnum():
        return True  # Luxembourgish d'Rechnung
    if not text[start - 1:start].isspace():
        return False
    words = text[max(0, start - look):start].split()
    if start > look and words and not text[start - look - 1].isspace():
        words.pop(0)  # a piece of a word the window cut
    if words and words[-1] in _ENGLISH:
        return True
    for back in range(1, min(_ADJECTIVES + 1, len(words)) + 1):
        if _marks_a_noun(words, back):
            return True
        if not (words[-back].isalpha() and words[-back].islower()):
            return False
    return False
