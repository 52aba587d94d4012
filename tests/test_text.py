"""chatmem.text: which characters of a one-line label (a speaker's name) show nothing."""

from __future__ import annotations

import pytest

from chatmem.text import hidden_character

ARJUN = "\u0d05\u0d30\u0d4d\u200d\u0d1c\u0d41\u0d28\u0d4d\u200d"
"""അര്‍ജുന്‍, Arjun in Malayalam's old encoding: each chillu is consonant + virama + U+200D."""


@pytest.mark.parametrize("name", [
    ARJUN, "\u0d05\u0d7c\u0d1c\u0d41\u0d7b",  # അർജുൻ, the atomic chillu letters
    ARJUN + " K", "\u0915\u094d\u200d\u0937",  # क्‍ष, a half form
    "\u0645\u062d\u0645\u062f\u200c\u0631\u0636\u0627",  # محمد‌رضا
    "(\u05d3\u05d5\u05d3)\u200f", "\u200f\u05d3\u05e0\u05d4", "\u0639\u0644\u064a \u061c(2)",
    "\U0001f642\u200d\u2194\ufe0f", "\U0001f642\u200d\u2195\ufe0f",  # head shaking, nodding
    "\U0001f6b6\u200d\u27a1\ufe0f", "\u26d3\ufe0f\u200d\U0001f4a5", "\U0001f34b\u200d\U0001f7e9",
    "\U0001f3f3\ufe0f\u200d\U0001f308", "\U0001f468\U0001f3fd\u200d\U0001f4bb",
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "王小明"])
def test_a_name_spelled_with_joiners_and_marks_hides_nothing(name: str) -> None:
    """The joiner check refused Arjun's chillu (a joiner at a word's end), a Hebrew name's
    mark after its parenthesis, and an emoji sequence ending in a math symbol made an emoji
    by U+FE0F (Emoji 15.1)."""
    assert hidden_character(name) is None


@pytest.mark.parametrize(("name", "hidden"), [
    ("Ana\u200e", "\u200e"), ("Ana\u200f", "\u200f"), ("Ana\u061c", "\u061c"),
    ("\u200f", "\u200f"), ("Ana\u200c", "\u200c"), ("Ana\u200d", "\u200d"),
    ("A\u200dna", "\u200d"), ("\u200c\u200d", "\u200c"), ("\u200dAna", "\u200d"),
    # A non-joiner after a word's last letter parts nothing: it would be a second محمد.
    ("\u0645\u062d\u0645\u062f\u200c", "\u200c"),
    ("x\u200d\u2194\ufe0f", "\u200d"), ("\U0001f642\u200d\u2194", "\u200d"),
    ("\U0001f642\u200d+\ufe0f", "\u200d"),
    ("Ana\u3164", "\u3164"), ("\u2800", "\u2800"), ("Ana\u200b", "\u200b"),
    ("Ana\U000e0069", "\U000e0069")])
def test_what_shows_nothing_in_a_name_is_named(name: str, hidden: str) -> None:
    assert hidden_character(name) == hidden
