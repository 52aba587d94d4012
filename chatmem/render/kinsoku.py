"""Line breaking that never starts a line with closing punctuation (kinsoku shori): Rich
folds Chinese and Japanese text cell by cell, so a wrapped description could start a line
with "，" or "。". The character before it moves down with it, as CJK typesetting does."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console, JustifyMethod, OverflowMethod
    from rich.containers import Lines

NO_LINE_START = frozenset("，。、；：！？）」』】》〉〕］｝”’…‥")
"""Closing punctuation no line may start with."""

_WORDS = re.compile(r"\s*\S+\s*")


def _folded(text: str, width: int) -> list[int]:
    """Where Rich's folding (`Text.wrap`, overflow "fold") starts each line after the first:
    words go whole where they fit, a word wider than a line is cut cell by cell (a Chinese
    sentence is one word). Rich's own divider is private, so its rule is written here."""
    breaks: list[int] = []
    column = 0
    for found in _WORDS.finditer(text):
        start, word = found.start(), found.group()
        length = cell_len(word.rstrip())
        if width - column >= length:
            column += cell_len(word)
        elif length > width:
            if start:
                breaks.append(start)
            column = 0
            for at, character in enumerate(word, start):
                size = cell_len(character)
                if column + size > width and column:
                    breaks.append(at)
                    column = 0
                column += size
        elif column and start:
            breaks.append(start)
            column = cell_len(word)
    return breaks


def line_breaks(text: str, width: int) -> list[int]:
    """Where to break `text` (one paragraph) into lines of at most `width` cells, as Rich's
    folding would, but with no line starting with closing punctuation (NO_LINE_START)."""
    breaks: list[int] = []
    start = 0
    while True:
        rest = _folded(text[start:], width)
        if not rest:
            return breaks
        at = start + rest[0]
        while at - 1 > start and text[at] in NO_LINE_START:
            at -= 1  # the character it follows goes down with it
        breaks.append(at)
        start = at


class Kinsoku(Text):
    """Text wrapped by `line_breaks` where Rich would fold it; as Text otherwise."""

    def wrap(self, console: Console, width: int, *, justify: JustifyMethod | None = None,
             overflow: OverflowMethod | None = None, tab_size: int = 8,
             no_wrap: bool | None = None) -> Lines:
        overflow = overflow or self.overflow
        plain = self.plain
        if (no_wrap or (no_wrap is None and self.no_wrap) or overflow not in (None, "fold")
                or "\t" in plain or not NO_LINE_START.intersection(plain) or width < 2):
            return super().wrap(console, width, justify=justify, overflow=overflow,
                                tab_size=tab_size, no_wrap=no_wrap)
        pieces = [piece for paragraph in self.split(allow_blank=True)
                  for piece in paragraph.divide(line_breaks(paragraph.plain, width))]
        broken = Text("\n").join(pieces)
        return Text.wrap(broken, console, width, justify=justify or self.justify,
                         overflow=overflow or "fold", tab_size=tab_size, no_wrap=False)


def kinsoku(text: str | Text) -> Kinsoku:
    """`text` (a cell, a description) as Kinsoku text, its styles kept."""
    if isinstance(text, str):
        return Kinsoku(text)
    out = Kinsoku(text.plain, style=text.style, justify=text.justify,
                  overflow=text.overflow, no_wrap=text.no_wrap, end=text.end)
    out.spans = list(text.spans)
    return out
