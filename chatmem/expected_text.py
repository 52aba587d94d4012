"""Whether a text says an expected string, as recall scoring reads it: eval's text recall
(a probe's `expect_text` in a context), `--answer` (in the model's reply) and the details a
summary dropped. Both sides go through `compared` (folded as the index folds words, in any
case); `mentions` then matches whole words and numbers, CJK anywhere."""

from __future__ import annotations

import re

from chatmem.fts import RUNS, folded
from chatmem.text import HAN, HANGUL, KANA

_CHINESE_COMMA = "\uff0c"


def compared(text: str) -> str:
    """`text` as recall scoring compares it: folded as the index folds it, in any case
    (ＯＲＤ７７３１ is ord7731, Zürich is zurich). Expected strings, contexts and answers
    all go through this one form, so they can never disagree on what matches.

    The Chinese comma (，) stays as written where it parts a list: folded to ",",
    MU5412，120人 and 房间305，306 read as one number each, so `mentions` missed MU5412
    and 306. Where it can only be a number's thousands (1，950, 共1，200人: 1-2 digits
    starting a number, then three) it is ",", so 1，950 says 1,950 and not 950. Three
    digits before it stay a list (305，306): rooms and flights are said that way far more
    often than an amount over 100,000 with a Chinese comma. The index drops both commas,
    so it finds the same words either way.

    A space between a CJK character and a letter, a digit or another CJK character is none
    (12 楼 says 12楼, 2025 年 12 月 31 日 says 2025年12月31日): Chinese and Japanese put
    no spaces between words, so one there is how it was typed, not a word's end. Hangul
    words are spaced, so between two of them it stays. Spaces between Latin words count."""
    said = _commas_compared(text)
    return said if said.isascii() else _CJK_SPACE.sub("", said)


_HAN_KANA = HAN + KANA
_CJK_SPACE = re.compile(
    rf"(?<=[{_HAN_KANA}])[^\S\n]+(?=[^\W_])|(?<=[^\W_])[^\S\n]+(?=[{_HAN_KANA}])"
    rf"|(?<=\d)[^\S\n]+(?=[{HANGUL}])|(?<=[{HANGUL}])[^\S\n]+(?=\d)")


def _commas_compared(text: str) -> str:
    if _CHINESE_COMMA not in text:
        return folded(text).casefold()
    first, *rest = (folded(part).casefold() for part in text.split(_CHINESE_COMMA))
    pieces, tail = [first], first[-_LONGEST_GROUPS:]
    for part in rest:
        joint = "," if _GROUP.match(part) and _ZH_GROUPS.search(tail) else _CHINESE_COMMA
        pieces += [joint, part]
        tail = (tail + joint + part)[-_LONGEST_GROUPS:]
    return "".join(pieces)


def mentions(text: str, expected: str) -> bool:
    """Whether `text` says `expected` (both `compared`): where it starts or ends with a
    letter or digit, the text's does not go on with one (Tom is not in Tomorrow, 950 not in
    9500, 950.5 nor 1,950), as the index's words go; CJK and the other unspaced scripts,
    which have no word ends, match anywhere (杭州 in 我们去杭州旅行). Zero decimals are
    the same number: 950.00 says 950."""
    if not expected:
        return True
    at = text.find(expected)
    while at >= 0:
        end = at + len(expected)
        if not (_goes_on_before(text, at, expected) or _goes_on_after(text, end, expected)):
            return True
        at = text.find(expected, at + 1)
    return False


_DECIMALS = re.compile(r"\.(?!0+(?!\d))\d")
_THOUSANDS = re.compile(r",\d{3}(?!\d)")
# A number written in thousands: 1-3 digits first, not going on from a word or a longer
# number (MU5412,120 and 20250,120 are lists, 1,950 and 1,950,000 one number each; so is
# 价格1,950, CJK having no word ends).
_GROUPS = re.compile(rf"(?<![^\W{RUNS}])\d{{1,3}}(?:,\d{{3}})*$")
_LONGEST_GROUPS = 48
"""Characters a thousands number is looked for in, back from where it ends: a longer one
is no amount anyone says, and a search back through all the text would grow with it."""
# A Chinese comma joins thousands only after 1-2 digits start a number (see `compared`).
_ZH_GROUPS = re.compile(rf"(?<![^\W{RUNS}])\d{{1,2}}(?:,\d{{3}})*$")
_GROUP = re.compile(r"\d{3}(?!\d)")


def _in_thousands(text: str, end: int) -> bool:
    """Whether the digits ending at text[end] are a number written in thousands so far."""
    return _GROUPS.search(text, max(0, end - _LONGEST_GROUPS), end) is not None


def _goes_on_before(text: str, at: int, expected: str) -> bool:
    """Whether the word or number `expected`, found at text[at], goes on into the text
    before it: a letter or digit there, or a number's integer part (19.5) or thousands
    (1,950)."""
    if not at or not _in_word(expected[0]):
        return False
    if _in_word(text[at - 1]):
        return True
    if not expected[0].isdigit() or at < 2 or not text[at - 2].isdigit():
        return False
    if text[at - 1] == ".":
        return True
    group = re.match(r"\d+", expected)
    return (text[at - 1] == "," and group is not None and len(group.group()) == 3
            and _in_thousands(text, at - 1))


def _goes_on_after(text: str, end: int, expected: str) -> bool:
    """Whether the word or number `expected`, ending at text[end], goes on into the text
    after it: a letter or digit there, decimals other than zeros (950.5, not 950.00), or a
    thousands group after a number's first 1-3 digits (1,950, not MU5412,120)."""
    if end == len(text) or not _in_word(expected[-1]):
        return False
    if _in_word(text[end]):
        return True
    if not expected[-1].isdigit():
        return False
    return bool(_DECIMALS.match(text, end) or (_THOUSANDS.match(text, end)
                                               and _in_thousands(text, end)))


_RUN = re.compile(rf"[{RUNS}]+")


def _in_word(char: str) -> bool:
    return (char.isalnum() or char == "_") and not _RUN.match(char)
