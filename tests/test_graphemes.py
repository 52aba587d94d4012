"""Where a character a reader sees starts (chatmem.graphemes): previews are cut there."""

from __future__ import annotations

import unicodedata
from itertools import pairwise

import pytest

from chatmem.graphemes import grapheme_prefix, grapheme_start

FAMILY = "👨\u200d👩\u200d👧\u200d👦"


def clusters(text: str) -> list[str]:
    starts = [at for at in range(len(text)) if grapheme_start(text, at)] + [len(text)]
    return [text[a:b] for a, b in pairwise(starts)]


@pytest.mark.parametrize(("text", "seen"), [
    ("我叫李雷", ["我", "叫", "李", "雷"]),
    (f"家{FAMILY}!", ["家", FAMILY, "!"]),
    ("🇨🇳🇯🇵🇰", ["🇨🇳", "🇯🇵", "🇰"]),
    ("👍🏽好", ["👍🏽", "好"]),
    ("🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", [
        "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"]),
    ("❤\ufe0f\u200d🔥", ["❤\ufe0f\u200d🔥"]),
    (unicodedata.normalize("NFD", "café"), ["c", "a", "f", "e\u0301"]),
    ("हिन्दी", ["हि", "न्दी"]),
    ("தமிழ்", ["த", "மி", "ழ்"]),
    ("ไม้", ["ไ", "ม้"]),
    ("\u1112\u1161\u11ab글", ["\u1112\u1161\u11ab", "글"]),
    ("a\r\nb\u200b\u0301", ["a", "\r\n", "b", "\u200b", "\u0301"]),
])
def test_each_character_a_reader_sees_is_one_cluster(text: str, seen: list[str]) -> None:
    assert clusters(text) == seen


def test_a_prefix_keeps_a_character_whole_or_leaves_it_out() -> None:
    assert grapheme_prefix("中" * 3 + FAMILY, 5) == "中" * 3
    assert grapheme_prefix("中" * 3 + FAMILY, 10) == "中" * 3 + FAMILY
    assert grapheme_prefix("中🇨🇳", 2) == "中"
    assert grapheme_prefix("e\u0301\u0301", 2) == ""
    assert grapheme_prefix("杭州", 0) == ""
