"""Quotes of a pinned detail: the verbatim sentence around it, never cut inside a word,
an id, or what a reader sees as one character."""

from __future__ import annotations

import unicodedata

import pytest
from growth import assert_linear
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


def _ids(n: int) -> str:
    return " ".join(f"ORD-{i}" for i in range(n))


def test_quotes_of_many_ids_in_one_message_cost_their_count_not_its_square() -> None:
    """Each quote was cut from a fresh copy of the message, finding every id left in it:
    4,000 ids in one message (an MCP record_turn) took 39 s, growing with their square."""
    assert_linear(lambda text: pin_quotes.first_quotes(text.split(), [(1, text)]), _ids, 250)
    found = pin_quotes.first_quotes(_ids(400).split(), [(7, _ids(400))])
    assert all(turn == 7 and anchor in quote for anchor, (turn, quote) in found.items())
    assert len(found) == 400 and len({quote for _, quote in found.values()}) > 40
    # Said together, they share one; an id said in full width is held by the ASCII one's.
    said = "Order ORD-1 (ＯＲＤ－１ on the slip) weighs 5 kg."
    anchors = ["ORD-1", "ＯＲＤ－１", "5 kg"]
    assert pin_quotes.first_quotes(anchors, [(2, "Nothing here."), (3, said + " Thanks!")]) == {
        a: (3, said) for a in anchors}

def test_a_long_sentence_with_a_decimal_point_costs_its_length() -> None:
    """A "." that ends no sentence (1.5) made the sentence before it fail from every place
    in it: 16 KB of words then "1.5" took 3 s for one quote."""
    assert_linear(lambda text: pin_quotes.quote_around(text, ["ORD-1"]),
                  lambda n: "a " * n + "1.5 ORD-1", 2_000)
    assert pin_quotes.quote_around("It costs 1.5 EUR for ORD-1. Next!", ["ORD-1"]) == (
        "It costs 1.5 EUR for ORD-1.")


def test_a_letter_that_case_folds_longer_keeps_the_quote_on_its_detail() -> None:
    """ß folds to ss: a place found in the folded text was read as one in the text, so
    each ß before an id moved its quote right, and 30 of them raised IndexError."""
    german = "Die Straße heißt Großstraße. " * 5 + "Bestellung ORD-1 ist da."
    assert pin_quotes.quote_around(german, ["ORD-1"]) == "Bestellung ORD-1 ist da."
    found = pin_quotes.first_quotes(["STRASSE", "ORD-1"], [(4, german)])
    assert found == {"STRASSE": (4, "Die Straße heißt Großstraße."),
                     "ORD-1": (4, "Bestellung ORD-1 ist da.")}
    assert "ORD-1" in pin_quotes.quote_around("Straße " * 30 + "order ORD-1 here.", ["ORD-1"])
