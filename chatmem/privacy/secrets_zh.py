"""Passwords said in Chinese the ways the sentence rules of chatmem.privacy.sensitive miss.

- changed to a value: 密码改为X, 我的邮箱密码改成了X, 把密码设成X了, 换成X;
- the value first: X是我的密码;
- a value in Chinese characters after an explicit link: 我的密码是 天王盖地虎,
  暗号是天王盖地虎, 口令：芝麻开门, 口令：天王盖地虎9527.

A code phrase in characters is what 暗号 and 口令 usually are, but a sentence about a
password reads the same way ("密码是6位数字", "密码是对的"): a value in characters is
taken only after 是/为/：/改为…, up to the clause end, and only when it holds none of
the words such a sentence is made of (NOT_IN_A_PHRASE_ZH). "密码每90天换一次" and
"我忘了密码" have no link and name none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from chatmem.lazy_patterns import lazy
from chatmem.privacy.credentials import looks_secret, value_of
from chatmem.privacy.secret_names import (
    CHANGED_TO_ZH,
    LINK_WORDS_ZH,
    NOT_A_SECRET,
    NOT_IN_A_PHRASE_ZH,
    OWNERS_ZH,
    SECRET_WORDS_ZH,
    VALUE_ZH,
)
from chatmem.privacy.word_lists import WordGate, lowered_text

_CLAUSE_PUNCT = r"\s，。！？；、,.!?;：:\"“”'‘’「」（）()"
_LINKED = lazy(
    rf"(?:{SECRET_WORDS_ZH})\s*(?:(?:{CHANGED_TO_ZH})\s*[:：]?|{LINK_WORDS_ZH})\s*"
    rf"(?:{VALUE_ZH}|(?P<phrase_zh>[^{_CLAUSE_PUNCT}]{{2,32}})(?=[{_CLAUSE_PUNCT}]|$))",
    re.IGNORECASE)
_OWNED = lazy(rf"是(?:{OWNERS_ZH})的?[\u4e00-\u9fffA-Za-z0-9]{{0,6}}?(?:{SECRET_WORDS_ZH})")
_GATE = WordGate(SECRET_WORDS_ZH)
_VALUE_REACH = 128


def _is_han(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff"


def _spoken(value: str) -> bool:
    """Whether a value in characters is a spoken password, not words about one."""
    return any(_is_han(c) for c in value) and not NOT_IN_A_PHRASE_ZH.intersection(value) \
        and not re.search(SECRET_WORDS_ZH, value) and value not in NOT_A_SECRET


def _value_before(text: str, end: int) -> tuple[int, str]:
    """The run of ASCII that is not a space ending at `end` (128 characters at most)."""
    start = end
    while start > max(0, end - _VALUE_REACH) and "!" <= text[start - 1] <= "~":
        start -= 1
    while start < end and text[start] in "\"'([{<":
        start += 1
    return start, text[start:end]


def passwords_zh(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, value) of each password `text` says in one of these Chinese ways."""
    if not _GATE.admits(lowered_text(text), {}):
        return
    for match in _LINKED.finditer(text):
        picked = value_of(match)
        group, value = picked if picked else ("phrase_zh", match.group("phrase_zh"))
        if value is None or value.lower() in NOT_A_SECRET:
            continue
        if group == "phrase_zh" and not _spoken(value):
            continue
        yield match.start(group), match.end(group), value
    for match in _OWNED.finditer(text):
        start, value = _value_before(text, match.start())
        if looks_secret(value) or (value.isdigit() and len(value) >= 4):
            yield start, match.start(), value
