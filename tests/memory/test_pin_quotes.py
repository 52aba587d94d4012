"""Quotes of a pinned detail: the verbatim sentence around it, never cut inside a word,
an id, or what a reader sees as one character."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatmem.graphemes import grapheme_start
from chatmem.memory import pin_quotes


def test_a_quote_is_the_verbatim_sentence_around_the_detail_cut_between_words() -> None:
    english = ("Hello there. My booking number is BK-1011 and the price is 77 EUR on"
               " 2026-03-12, paid by card. Thanks!")
    quote = pin_quotes.quote_around(english, ["77 EUR"])
    assert quote.startswith("…") and quote.endswith("…")
    assert len(quote) <= pin_quotes.QUOTE_WIDTH + 2
    assert "the price is 77 EUR on 2026-03-12" in quote and "Hello" not in quote
    words = quote.strip("…").split()
    assert all(w.strip(",") in english.split() or w in english.split() for w in words)
    # Details said together share one quote that holds them all.
    quote = pin_quotes.quote_around(english, ["BK-1011", "2026-03-12"])
    assert "BK-1011" in quote and "2026-03-12" in quote and "Hello" not in quote
    chinese = "你好。我叫王小明，预算是五千元，三月十五日出发，航班MU5137，住在湖景花园酒店。谢谢！"
    quote = pin_quotes.quote_around(chinese, ["五千元"])
    assert "五千元" in quote and "你好" not in quote and "谢谢" not in quote
    assert pin_quotes.quote_around(chinese, ["ORD-1"]) == ""


@settings(max_examples=80, deadline=None)
@given(st.text(min_size=0, max_size=120), st.sampled_from(["ORD-7731", "五千元", "77 EUR"]),
       st.text(min_size=0, max_size=120))
def test_a_quote_is_a_verbatim_piece_holding_the_detail(before: str, anchor: str,
                                                        after: str) -> None:
    content = before + anchor + after
    quote = pin_quotes.quote_around(content, [anchor])
    piece = quote.removeprefix("…").removesuffix("…")
    assert anchor in piece or " ".join(anchor.split()).casefold() in piece.casefold()
    assert piece in " ".join(content.split())
    assert "\n" not in quote
    flat = " ".join(content.split())
    at = flat.find(piece)
    assert grapheme_start(flat, at) and grapheme_start(flat, at + len(piece))


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


@pytest.mark.parametrize("width", range(18, 48))
def test_a_quote_never_cuts_a_flag_an_emoji_or_an_accent_off(width: int) -> None:
    around = _nfd("Hélène àéîõü ") + "🇯🇵🇰🇷👨\u200d👩\u200d👧\u200d👦👍🏽 我们 "
    content = around * 3 + "order ORD-7731 " + around * 3
    piece = pin_quotes.quote_around(content, ["ORD-7731"], width).strip("…")
    at = content.find(piece)
    assert "ORD-7731" in piece and at >= 0
    assert grapheme_start(content, at) and grapheme_start(content, at + len(piece)), ascii(piece)
