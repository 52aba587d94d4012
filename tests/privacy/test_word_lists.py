"""The word gates: a pattern is skipped for a text only where it cannot match it.

A gate answers from a substring test of the lowered text, so what it may never do is rule
out a text its pattern matches; these tests try every pattern that has a gate on the
corpora's messages, changed in the ways that could fool a substring test.
"""

from __future__ import annotations

import re

import pytest
from bench_modules import load
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatmem.privacy import credentials, named_details, secret_guard, secret_names
from chatmem.privacy.word_lists import WordGate, lowered_text, needed_words, spelled

_GATED = [
    *((pattern, credentials._GATES[name]) for name, pattern in credentials._OTHERWISE.items()),
    *((pattern, gate) for pattern, gate, _ in (*named_details._NAMED, *named_details._NUMBERS)),
    *((pattern, gate) for pattern, gate, _ in secret_guard._LABELS),
]

CORPUS, OTHER = load("privacy_corpus"), load("privacy_corpus_other_names")
_PHRASES = [message for cases in (CORPUS.SENSITIVE, CORPUS.HARMLESS, OTHER.SENSITIVE,
                                  OTHER.HARMLESS) for _, _, _, messages in cases
            for message in messages]


def _admitted(gate: WordGate, text: str) -> bool:
    return gate.admits(lowered_text(text), {})


def test_every_pattern_that_finds_something_in_the_corpora_is_admitted() -> None:
    found = 0
    for text in _PHRASES:
        for pattern, gate in _GATED:
            if pattern.search(text):
                found += 1
                assert _admitted(gate, text), (pattern.pattern[:60], text)
    assert found > 150  # the corpora exercise the gates, not only their refusals


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PHRASES), min_size=1, max_size=3),
       st.sampled_from(["", "x", "the ", "FRONT ", "用", "İ", "\u212a"]),
       st.sampled_from([" ", "x", "，", "\n"]),
       st.sampled_from([str, str.upper, str.title, str.swapcase]),
       st.integers(min_value=0, max_value=3))
def test_a_gate_never_rules_out_a_text_its_pattern_matches(
        phrases: list[str], prefix: str, glue: str, case: object, swap: int) -> None:
    text = case(prefix + glue.join(phrases))  # type: ignore[operator]
    # letters IGNORECASE reads as ASCII ones, in place of theirs
    text = text.replace("k", "\u212a", swap).replace("s", "\u017f", swap)
    for pattern, gate in _GATED:
        if pattern.search(text):
            assert _admitted(gate, text), (pattern.pattern[:60], text)


def test_a_text_without_the_words_is_ruled_out_and_one_with_them_is_not() -> None:
    gate = WordGate(secret_names.THINGS, secret_names.OPENS)
    assert not _admitted(gate, "Can you summarize what we decided about item 2?")
    assert not _admitted(gate, "我们五月去杭州旅行，预算五千元。")
    assert _admitted(gate, "The SIDE DOOR opens with 7781")
    # a letter IGNORECASE reads as "k" leaves nothing to rule out by substrings
    assert _admitted(gate, "nothing here but a \u212a")


@pytest.mark.parametrize("words", [secret_names.THINGS, secret_names.CODE_WORDS,
                                   secret_names.THINGS_ZH, secret_names.USES,
                                   named_details._LOGIN_NAMES, named_details._PASSPORT])
def test_each_text_a_list_spells_holds_one_of_its_needed_words(words: str) -> None:
    needed = needed_words(words)
    for text in spelled(words):
        if re.fullmatch(f"(?:{words})", text, re.IGNORECASE):
            assert any(word in text.lower() for word in needed), text


@pytest.mark.parametrize(("words", "needed"), [
    ("log[ -]?in|sign[ -]?in", {"log", "sign"}),  # a class is not a letter
    (r"e-?mail|passport(?: no\.?)?", {"mail", "passport"}),  # the longest run
    (r"ab*cd|\sdef", {"cd", "def"}),  # a letter under * may be missing; an escape is none
    ("card(?: number)?|id card number", {"card"}),  # covered by a word already needed
    (r"\d{3}|pin", {""}),  # a text without a letter: nothing ruled out
])
def test_the_words_needed_are_the_literal_runs(words: str, needed: set[str]) -> None:
    assert needed_words(words) == needed
