"""Layouts that fit the console: the first of several that fits, labels that wrap
between names (never inside one), entries that flow onto the next line whole."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text


class Fitted:
    """The first of several layouts whose minimum width fits the console; else the last.

    Rich squeezes a table that does not fit by shrinking its wrappable columns to
    nothing (row labels vanish) and cutting no-wrap ones off, so a narrow
    terminal gets a different layout instead.
    """

    def __init__(self, *layouts: RenderableType) -> None:
        self.layouts = layouts

    def choose(self, console: Console, options: ConsoleOptions) -> RenderableType:
        # Measurement.get caps the minimum at the width it is given: ask with room to spare.
        roomy = options.update_width(10_000)
        for layout in self.layouts[:-1]:
            if Measurement.get(console, roomy, layout).minimum <= options.max_width:
                return layout
        return self.layouts[-1]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Trimmed(self.choose(console, options))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.choose(console, options))


_PIECE = re.compile(r"[^+,]*[+,]|[^+,]+")
"""A label's unbreakable pieces within a word: a `+` or `,` ends one."""


class Label:
    """A strategy label wrapped to `width`: between words and after `+` or `,`, never
    inside a name (Rich alone would fold `summary-buffer+retrieval` mid-word). Later
    lines start flush, as `sessions list` puts parameters under a strategy: the row's
    empty cells beside them show they continue the row above."""

    def __init__(self, text: str, style: str = "", width: int | None = None) -> None:
        self.text, self.style = text, style
        self.lines = [text] if width is None else _wrap(_pieces(text), width)

    @staticmethod
    def narrowest(text: str) -> int:
        """The narrowest width it wraps to: its longest piece."""
        return max((cell_len(piece) for piece, _ in _pieces(text)), default=1)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text("\n".join(self.lines), style=self.style, overflow="fold")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = max(cell_len(line) for line in self.lines)
        return Measurement(width, width)


def _pieces(text: str) -> list[tuple[str, bool]]:
    """(piece, joins the piece before with a space) for each unbreakable piece."""
    return [(piece, i == 0) for word in text.split()
            for i, piece in enumerate(_PIECE.findall(word))]


def _wrap(pieces: Sequence[tuple[str, bool]], width: int) -> list[str]:
    out: list[str] = []
    line = ""
    for piece, spaced in pieces:
        joined = f"{line} {piece}" if line and spaced else line + piece
        if line and cell_len(joined) > width:
            out.append(line)
            line = piece
        else:
            line = joined
    return [*out, line]


class Narrowing:
    """A table whose label column is as wide as the console leaves room for, and no wider:
    labels wrap only as much as they must (`build(width)` makes the table)."""

    def __init__(self, build: Callable[[int | None], Table], labels: Sequence[str]) -> None:
        self.build = build
        self.widest = max((cell_len(label) for label in labels), default=1)
        self.narrowest = max((Label.narrowest(label) for label in labels), default=1)

    def choose(self, console: Console, options: ConsoleOptions) -> Table:
        roomy = options.update_width(10_000)
        for width in range(self.widest, self.narrowest, -1):
            table = self.build(None if width == self.widest else width)
            if Measurement.get(console, roomy, table).maximum <= options.max_width:
                return table
        return self.build(self.narrowest)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.choose(console, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        roomy = options.update_width(10_000)
        narrow = Measurement.get(console, roomy, self.build(self.narrowest))
        wide = Measurement.get(console, roomy, self.build(None))
        return Measurement(narrow.minimum, wide.maximum).clamp(max_width=options.max_width)


class Flow:
    """Entries side by side, wrapped between entries (a key, a legend), never inside one."""

    def __init__(self, entries: Sequence[Text], gap: int = 2) -> None:
        self.entries, self.gap = entries, gap

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        out, used = Text(), 0
        for entry in self.entries:
            width = entry.cell_len
            if used and used + self.gap + width > options.max_width:
                out.append("\n")
                used = 0
            elif used:
                out.append(" " * self.gap)
                used += self.gap
            out.append_text(entry)
            used += width
        yield out

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widths = [e.cell_len for e in self.entries] or [0]
        return Measurement(max(widths), sum(widths) + self.gap * (len(widths) - 1))


class Hanging:
    """`text` with every line after its first `indent` columns in, a message's own newlines
    and the console's wraps alike: where lines start `[2] user:` (a transcript) or
    `reply:`, a message's later lines could otherwise pass for other messages."""

    def __init__(self, text: Text, indent: int = 2) -> None:
        self.text, self.indent = text, indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width - self.indent, 1)
        out = Text(end=self.text.end)
        # Printed with soft_wrap (a pipe, a file), lines are not wrapped at the width: only
        # the message's own newlines start lines, a long URL stays whole.
        lines = self.text.split("\n", allow_blank=True) if options.no_wrap else \
            self.text.wrap(console, width, overflow="fold")
        for i, line in enumerate(lines):
            if i:
                out.append("\n" + " " * self.indent)
            out.append_text(line)
        # Each line now fits: wrapped again, a line of spaces would move.
        out.no_wrap, out.overflow = True, "ignore" if options.no_wrap else "crop"
        yield out

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        text = Measurement.get(console, options, self.text)
        return Measurement(text.minimum + self.indent, text.maximum + self.indent
                           ).clamp(max_width=options.max_width)


class Trimmed:
    """`inner` with each line ending at its last mark: a table pads its last column to its
    width (and centres its title in spaces), so `chatmem sessions list | cat -A` showed every
    header and parameter line padded, and a script's `grep 'k=2$'` missed them."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in console.render_lines(self.inner, options, pad=False):
            yield from trimmed(line)
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.inner)


def trimmed(line: list[Segment]) -> list[Segment]:
    """`line` without its trailing blanks, unless a background colour shows them."""
    out = list(line)
    while out:
        last = out[-1]
        if last.control or (last.style is not None and last.style.bgcolor is not None):
            break
        text = last.text.rstrip(" ")
        if text:
            out[-1] = Segment(text, last.style)
            break
        out.pop()
    return out
