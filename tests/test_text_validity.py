"""is_valid answers whether a text holds a lone surrogate, whatever way it finds out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chatmem.text import REPLACEMENT, is_valid, valid_text

# Any code point, surrogates included: what a plugin's text or a broken pipe may hold.
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None))


@given(ANY_TEXT)
def test_valid_exactly_when_no_surrogate(text: str) -> None:
    assert is_valid(text) is not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def test_surrogates_in_ascii_chinese_and_emoji_text() -> None:
    assert is_valid("plain ASCII") and is_valid("预算五千元，") and is_valid("\U0001F600")
    for text in ("a\ud800b", "\udfff", "好\udc80", "\ud83d\ude00"):
        assert not is_valid(text)
        assert valid_text(text) == "".join(REPLACEMENT if 0xD800 <= ord(c) <= 0xDFFF else c
                                           for c in text)
