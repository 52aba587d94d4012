"""Where a character a reader sees starts (chatmem.graphemes): previews are cut there."""

from __future__ import annotations

import unicodedata
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    ("ดื่มน้ำ", ["ดื่", "ม", "น้ำ"]),  # Thai AM is a letter written on the one before
    ("ຄຳ", ["ຄຳ"]),
    ("\u1000\u102c", ["\u1000", "\u102c"]),  # Myanmar tall AA stands alone
    ("\u0600\u0661\u0662", ["\u0600\u0661", "\u0662"]),  # the number sign joins its digit
    ("\u0d4e\u0d15", ["\u0d4e\u0d15"]),  # the Malayalam dot reph joins its consonant
    ("\u0600\n", ["\u0600", "\n"]),
    ("ｶﾞｷ", ["ｶﾞ", "ｷ"]),
    ("ខ្មែរ", ["ខ្មែ", "រ"]),  # Khmer's coeng stacks the consonant
    ("သ္မီး", ["သ္မီ", "း"]),
])
def test_each_character_a_reader_sees_is_one_cluster(text: str, seen: list[str]) -> None:
    assert clusters(text) == seen


def test_a_prefix_keeps_a_spacing_vowel_with_its_letter() -> None:
    assert grapheme_prefix("ดื่มน้ำ", 6) == "ดื่ม"
    assert grapheme_prefix("ดื่มน้ำ", 7) == "ดื่มน้ำ"


def _block(first: int, last: int) -> list[str]:
    return [chr(c) for c in range(first, last) if unicodedata.category(chr(c)) != "Cn"]


# Scripts whose rules differ from Latin's by spacing marks, Prepend and Extend letters (their
# viramas aside: the `regex` module joins a virama to a consonant of another script).
_SCRIPTS = {
    "thai": _block(0x0E01, 0x0E5C), "lao": _block(0x0E81, 0x0EE0),
    "myanmar": [c for c in _block(0x1000, 0x10A0) if c != "\u1039"],
    "khmer": [c for c in _block(0x1780, 0x17FA) if c != "\u17d2"],
    "tai tham": [c for c in _block(0x1A20, 0x1AAE) if c != "\u1a60"],
    "arabic": [*_block(0x0600, 0x0606), *_block(0x0660, 0x066A), "ا", "ب"],
    "half-width kana": _block(0xFF66, 0xFFA0),
}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(_SCRIPTS)).flatmap(
    lambda name: st.text(st.sampled_from(_SCRIPTS[name]), min_size=1, max_size=8)))
def test_clusters_are_unicodes_in_scripts_with_spacing_marks_and_prepend(text: str) -> None:
    regex = pytest.importorskip("regex")  # tiktoken's dependency, Unicode's rules in full
    assert clusters(" " + text) == regex.findall(r"\X", " " + text)


def test_a_prefix_keeps_a_character_whole_or_leaves_it_out() -> None:
    assert grapheme_prefix("中" * 3 + FAMILY, 5) == "中" * 3
    assert grapheme_prefix("中" * 3 + FAMILY, 10) == "中" * 3 + FAMILY
    assert grapheme_prefix("中🇨🇳", 2) == "中"
    assert grapheme_prefix("e\u0301\u0301", 2) == ""
    assert grapheme_prefix("杭州", 0) == ""
