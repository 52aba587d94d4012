"""ASCII text is not searched for Chinese time words: every way Chinese names one holds a
Chinese character, which these tests check on the pattern itself and on texts."""

from __future__ import annotations

import re
from datetime import UTC, datetime

# The parser `re` compiles with (Python 3.11 on): what a match must hold is read from it.
from re import _constants as sre
from re import _parser as sre_parse
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from chatmem.memory import time_words, time_words_zh
from chatmem.memory.time_words import may_name_time, read

NOW = datetime(2026, 6, 1, 9, 44, tzinfo=UTC)


def _needs_non_ascii(items: Any) -> bool:
    """Whether every match of this parsed sequence holds a character past ASCII."""
    for op, arg in items:
        if op is sre.LITERAL and arg > 127:
            return True
        if op is sre.IN and all(kind is sre.LITERAL and value > 127 for kind, value in arg):
            return True
        if op is sre.SUBPATTERN and _needs_non_ascii(arg[-1]):
            return True
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and arg[0] >= 1 and _needs_non_ascii(arg[2]):
            return True
        if op is sre.BRANCH and all(_needs_non_ascii(branch) for branch in arg[1]):
            return True
    return False


def test_every_way_chinese_names_a_time_holds_a_chinese_character() -> None:
    parsed = sre_parse.parse(time_words_zh.PATTERN.pattern, time_words_zh.PATTERN.flags)
    assert not time_words_zh.PATTERN.flags & re.IGNORECASE
    assert _needs_non_ascii(parsed)
    # The check itself: ASCII in any one way, and it says so.
    assert not _needs_non_ascii(sre_parse.parse(time_words_zh.PATTERN.pattern + "|5"))


FRAGMENTS = ["last", "this", "May", "may", "June", "2023", "2023-05-08", "5", "8th", "of",
             "the", "week", "ago", "3 days", "yesterday", "early", "end", "on", "around",
             ",", ".", " ", "  ", "\n", "ｌａｓｔ", "２０２３", "item 42", "ORD-17"]


@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12))
def test_ascii_text_reads_as_when_every_pattern_searched_it(pieces: list[str]) -> None:
    text = " ".join(pieces)
    folded = time_words._folded(text)
    assert folded.isascii()
    every = (time_words._EN, time_words_zh.PATTERN, time_words._ISO)
    assert may_name_time(text) == any(p.search(folded) is not None for p in every)
    assert time_words_zh.PATTERN.search(folded) is None


def test_chinese_text_is_still_read() -> None:
    assert may_name_time("我们上个月去了杭州")
    assert read("last May 我们上个月去了杭州", NOW)[0]
    assert len(read("last May 我们上个月去了杭州", NOW)[0]) == 2
