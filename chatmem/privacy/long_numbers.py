"""A long number a purge erases however its digits are grouped: a bank card's 16 to 19
digits (6222 0212 3456 7890 123, 4111-1111-1111-1111) and a Chinese resident ID's 18
(110101 19900307 123X), as their owners copy them off a card or type them for reading.

A value is a long number when it is 16 to 19 digits (an ID's last may be X), written in
one run or in groups split by a space or a dash. It is mentioned where a text writes the
same digits in one run or in such groups, standing whole: a group more on either side
that is digits (4111 1111 1111 1111 2) makes it another number.
"""

from __future__ import annotations

import re
import unicodedata

from chatmem.text_caches import text_cache

MIN_DIGITS, MAX_DIGITS = 16, 19
_SPLIT = "[ \\-\u00a0\u3000\u2010-\u2013\uff0d]"
_VALUE = re.compile(rf"\d+(?:{_SPLIT}\d+)*[xX]?")
_GROUPS = re.compile(
    rf"(?<![\dA-Za-z_])(?<!\d[.,])\d+(?:{_SPLIT}\d+)*(?:[xX\uff38\uff58])?(?![\dA-Za-z_]|[.,]\d)")
"""Digits in groups, standing whole: no letter or digit of a code around them (a Chinese
word may touch them: 身份证110101…)."""


def _digits(text: str) -> str:
    return "".join(str(unicodedata.digit(c)) if c.isdigit() else "X"
                   for c in text if c.isdigit() or c in "xXＸｘ")


@text_cache(maxsize=256)
def long_number_of(value: str) -> str | None:
    """`value`'s digits (an X last kept, upper case) when it is a long number, else None."""
    value = unicodedata.normalize("NFKC", value.strip())
    if not _VALUE.fullmatch(value):
        return None
    digits = _digits(value)
    if not MIN_DIGITS <= len(digits) <= MAX_DIGITS or "X" in digits[:-1]:
        return None
    return digits


def long_number_spans(text: str, digits: str) -> list[tuple[int, int]]:
    """Where `text` writes `digits` (start, end), in one run or in groups, whole."""
    spans = []
    for m in _GROUPS.finditer(text):
        if _digits(m.group()) == digits:
            spans.append(m.span())
    return spans


def needle(digits: str) -> str:
    """What every ASCII row writing `digits` holds: its last three digits (a card's last
    group has three at least)."""
    return digits.rstrip("X")[-3:]
