"""Where a character a reader sees starts: a grapheme cluster, by Unicode's rules (UAX #29).

A flag is two code points, an emoji family seven, an accented letter two, a Hindi
conjunct three: text cut for a preview must not end inside one (half a flag shows as
a boxed letter, an accent falls off its letter). The standard library has no such
rule and the `regex` module is not a dependency, so this is the rule over
unicodedata; tests/test_graphemes.py checks it.
"""

from __future__ import annotations

import unicodedata

_REGIONAL_INDICATORS = range(0x1F1E6, 0x1F200)
_EXTENDS = (range(0x1F3FB, 0x1F400),  # emoji skin tones
            range(0xE0020, 0xE0080),  # tags: the flags of England, Scotland and Wales
            range(0xFF9E, 0xFFA0))  # half-width kana voicing marks (ｶﾞ), letters by category
_SPACING_LETTERS = frozenset("\u0e33\u0eb3")
"""Thai and Lao AM (น้ำ, ຄຳ): letters by category, but written on the character before."""
_SPACING_EXCEPTIONS = frozenset((0x102B, 0x102C, 0x1038, *range(0x1062, 0x1065),
                                 *range(0x1067, 0x106E), 0x1083, *range(0x1087, 0x108D), 0x108F,
                                 *range(0x109A, 0x109D), 0x1A61, 0x1A63, 0x1A64, 0xAA7B, 0xAA7D,
                                 0x11720, 0x11721))
"""Spacing marks of Myanmar, Tai Tham, Tai Viet and Ahom that stand as characters of their own."""
_PREPEND = frozenset((*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD,
                      0x110CD, 0x0D4E, 0x111C2, 0x111C3, 0x1193F, 0x11941, 0x11A3A,
                      *range(0x11A84, 0x11A8A), 0x11D46))
"""What joins the character after it (Unicode's Prepend): the Arabic number sign before its
digits (؀١٢), the Malayalam dot reph before its consonant (ൎക)."""
_HANGUL_SYLLABLE = {("L", "L"), ("L", "V"), ("L", "LV"), ("L", "LVT"), ("LV", "V"), ("LV", "T"),
                   ("V", "V"), ("V", "T"), ("LVT", "T"), ("T", "T")}
"""Hangul parts that continue the syllable before them (leading, vowel, trailing jamo)."""


def _jamo(char: str) -> str:
    """A Hangul character's part in a syllable: L, V, T, LV, LVT, or "" for none."""
    code = ord(char)
    if 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97C:
        return "L"
    if 0x1160 <= code <= 0x11A7 or 0xD7B0 <= code <= 0xD7C6:
        return "V"
    if 0x11A8 <= code <= 0x11FF or 0xD7CB <= code <= 0xD7FB:
        return "T"
    if 0xAC00 <= code <= 0xD7A3:
        return "LV" if (code - 0xAC00) % 28 == 0 else "LVT"
    return ""


def _control(char: str) -> bool:
    category = unicodedata.category(char)
    return category in ("Cc", "Zl", "Zp") or (
        category == "Cf" and not _extends(char) and ord(char) not in _PREPEND)


def _attaches(char: str) -> bool:
    """Whether `char` is written on the character before it (Unicode's Extend and SpacingMark)."""
    if ord(char) in _SPACING_EXCEPTIONS:
        return False
    return _extends(char) or char in _SPACING_LETTERS


def _extends(char: str) -> bool:
    code = ord(char)
    return (unicodedata.category(char)[0] == "M" or char in "\u200c\u200d"
            or any(code in extend for extend in _EXTENDS))


def _cluster_base(text: str, at: int) -> str:
    """The character text[at] extends (itself when it extends none)."""
    while at > 0 and _extends(text[at]):
        at -= 1
    return text[at]


_LINKERS = "\u094d\u09cd\u0acd\u0b4d\u0c4d\u0d4d\u1039\u17d2\u1a60\u1b44\u1bab\uaaf6"
"""The viramas that join two consonants into one conjunct (Devanagari, Bengali, Gujarati,
Oriya, Telugu, Malayalam; Myanmar's and Khmer's stacked consonants, Tai Tham, Balinese,
Sundanese, Meetei Mayek: Unicode 16's list); Tamil's and others' leave them two characters."""


def _indic_conjunct(text: str, at: int) -> bool:
    """Whether text[at] is a consonant a virama joins to the consonant before it (क्ष)."""
    virama, char = text[at - 1], text[at]
    if virama not in _LINKERS or at < 2:
        return False
    base = _cluster_base(text, at - 1)
    return all(unicodedata.category(c) == "Lo" and ord(c) >> 7 == ord(virama) >> 7
               for c in (char, base))


def _pictographic(char: str) -> bool:
    # Close to Unicode's Extended_Pictographic, which unicodedata does not give.
    code = ord(char)
    if code in _REGIONAL_INDICATORS or code in _EXTENDS[0]:
        return False
    return unicodedata.category(char) == "So" or 0x1F000 <= code <= 0x1FFFF


def _joined_emoji(text: str, joiner: int) -> bool:
    """Whether the zero-width joiner text[joiner] follows an emoji (its marks and skin
    tone between them)."""
    at = joiner - 1
    while at >= 0 and (unicodedata.category(text[at]) in ("Mn", "Me") or text[at] == "\u200c"
                       or any(ord(text[at]) in extend for extend in _EXTENDS)):
        at -= 1
    return at >= 0 and _pictographic(text[at])


def grapheme_start(text: str, at: int) -> bool:
    """Whether text[at] starts what a reader sees as one character (a grapheme cluster,
    by Unicode's rules): never a combining mark or a spacing vowel sign (ำ), a skin tone, the
    emoji a zero-width joiner joins, the second half of a flag's pair of regional
    indicators, a Hangul jamo that continues its syllable, the consonant a virama joins,
    nor what follows a Prepend character (the Arabic number sign's digit)."""
    if at <= 0 or at >= len(text):
        return True
    char, before = text[at], text[at - 1]
    if _control(before) or _control(char):
        return (before, char) != ("\r", "\n")
    if _attaches(char) or _indic_conjunct(text, at) or ord(before) in _PREPEND:
        return False
    if before == "\u200d" and _pictographic(char) and _joined_emoji(text, at - 1):
        return False
    if (_jamo(before), _jamo(char)) in _HANGUL_SYLLABLE:
        return False
    if ord(char) in _REGIONAL_INDICATORS:
        run = at
        while run > 0 and ord(text[run - 1]) in _REGIONAL_INDICATORS:
            run -= 1
        return (at - run) % 2 == 0
    return True


def grapheme_prefix(text: str, most: int) -> str:
    """The longest start of `text` of `most` code points at most that cuts no character a
    reader sees (a flag, an emoji family, an accented letter is kept whole or left out)."""
    end = max(min(most, len(text)), 0)
    while not grapheme_start(text, end):
        end -= 1
    return text[:end]


def one_line(text: str, most: int) -> str:
    """`text` on one line (its runs of spaces and line breaks as one space), cut to `most`
    characters with … where it is longer, never inside a character a reader sees."""
    flat = " ".join(text.split())
    return flat if len(flat) <= most else grapheme_prefix(flat, most - 1).rstrip() + "…"
