"""Kinsoku line breaking: where Rich would fold, but never a line opening on closing
punctuation, never a line wider than asked, no text lost."""

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from chatmem.render.kinsoku import NO_LINE_START, line_breaks

PIECES = st.sampled_from(["记忆", "标记", "，", "。", "：", "）", " ", "word", "长" * 12, "a",
                          "  "])


def lines_of(text: str, breaks: list[int]) -> list[str]:
    edges = [0, *breaks, len(text)]
    return [text[a:b] for a, b in pairwise(edges)]


@given(st.lists(PIECES, min_size=1, max_size=30).map("".join), st.integers(2, 40))
def test_lines_keep_the_text_fit_the_width_and_never_open_on_closing_punctuation(
        text: str, width: int) -> None:
    breaks = line_breaks(text, width)
    assert breaks == sorted(set(breaks)) and all(0 < b < len(text) for b in breaks)
    lines = lines_of(text, breaks)
    assert "".join(lines) == text
    for line in lines:
        assert cell_len(line.rstrip()) <= width or len(line.rstrip()) == 1
    for previous, line in pairwise(lines):
        # Moving the character before it down is all kinsoku may do: a line of one
        # character followed by punctuation keeps it (the line would be empty).
        assert line[0] not in NO_LINE_START or len(previous) == 1


def test_a_chinese_sentence_breaks_before_the_character_its_comma_follows() -> None:
    text = "保留最近的对话轮次，并在上下文中标记重要的细节。"
    lines = lines_of(text, line_breaks(text, 18))
    assert lines == ["保留最近的对话轮", "次，并在上下文中标", "记重要的细节。"]
