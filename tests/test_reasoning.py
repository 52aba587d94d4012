"""chatmem.reasoning: the blocks a model's reasoning takes in its reply text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chatmem.reasoning import REASONING, blocks_replaced

PIECES = ["<think>", "</think>", "<THINKING>", "</thinking>", "<reasoning>", "</Reasoning>",
          '<details type="reasoning" open>', "</details>", "想", "a", "\n", " ", "<", ">"]


@settings(max_examples=2_000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16))
def test_blocks_are_replaced_as_the_pattern_would_replace_them(pieces: list[str]) -> None:
    # blocks_replaced is REASONING.sub in one pass (c073e203: the pattern read to the text's
    # end for each tag no closing tag followed, quadratic in a client's message); the two
    # must find the same blocks, which its commit checked and no test kept.
    text = "".join(pieces)
    assert blocks_replaced(text, "·") == REASONING.sub("·", text)
