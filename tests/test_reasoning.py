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


def test_many_blocks_or_unfinished_tags_are_read_in_linear_time() -> None:
    # A served client's assistant messages are compared without their blocks, and a stored
    # reply is sent without the blocks it opens with, at each request: 20,000
    # `<details type="reasoning"` with no ">" after them took 9.8 s, a 4.8 MB reply of
    # `<think></think>` blocks 39 s (both quadratic; a 16 MiB body, hours).
    from growth import assert_linear

    from chatmem.reasoning import without_reasoning

    def unfinished(n: int) -> str:
        return '想<details type="reasoning" ' * n

    def leading(n: int) -> str:
        return "<think>想</think>" * n + "答"

    assert blocks_replaced(unfinished(3), "·") == REASONING.sub("·", unfinished(3))
    assert blocks_replaced(unfinished(3) + ">a</details>", "·") == "想·"
    assert without_reasoning(leading(3)) == "答"
    assert_linear(lambda text: blocks_replaced(text, "·"), unfinished, 2500, "unfinished")
    assert_linear(without_reasoning, leading, 40000, "leading")
