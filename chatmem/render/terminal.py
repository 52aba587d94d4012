"""Text from a session, a model or a file never drives the terminal.

A session name, a message or a model's reply can hold escape sequences
(`\\x1b]0;PWNED\\x07` retitles the window, `\\x1b[2J` clears it). Every console
chatmem prints through shows control characters as visible symbols instead;
Rich's own styling and cursor control are untouched.
"""

from __future__ import annotations

import errno
import os
import re
from typing import Any

from rich.cells import cell_len
from rich.console import (
    Console,
    ConsoleDimensions,
    ConsoleOptions,
    ConsoleRenderable,
    RenderableType,
    RenderHook,
    RenderResult,
)
from rich.segment import Segment

from chatmem.graphemes import grapheme_start
from chatmem.text import SHOWN_ESCAPED, code_point


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␇ for BEL: visible, inert
    if code == 0x7F:
        return "\u2421"  # ␡
    return code_point(match.group())  # C1 and bidi controls: \u009b, \u202e


def printable(text: str) -> str:
    """`text` with control characters (escape sequences' first byte, a lone CR, C1 controls,
    bidi embeddings and overrides) made visible; a CRLF line end and the bidi marks kept
    (chatmem.text.SHOWN_ESCAPED says why)."""
    return SHOWN_ESCAPED.sub(_picture, text)


class Printable:
    """A renderable drawn with its data's control characters made visible (Rich's own
    control segments, cursor moves and styles, pass as they are)."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.renderable, options):
            yield segment if segment.control else Segment(printable(segment.text),
                                                          segment.style)


def on_screen(console: Console) -> bool:
    """Whether `console` draws on a terminal someone watches, where a reply is Markdown
    redrawn in place. Not `Console.is_terminal` alone: FORCE_COLOR (colour in a CI log)
    makes that true of a pipe or a file too, which then got the reply reflowed to the
    terminal's width with styles and cursor moves, where `--help` promises the text as sent.
    Colour stays Rich's to decide; TTY_COMPATIBLE=0 still says no. A dumb terminal (TERM=dumb:
    Emacs's shell, an IDE's console) is not one either: it cannot style or redraw, and Rich's
    Markdown there lost the reply's heading marks, `**bold**` and `code`."""
    if not console.is_terminal or console.is_dumb_terminal:
        return False
    isatty = getattr(console.file, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed file
        return False


def is_line(renderable: object) -> bool:
    """Whether `renderable` is a line of text (kept whole off a screen: a status line, the
    token line's fields), not a panel or a table (laid out at the width wherever it is
    printed, or its borders cut its text)."""
    from rich.text import Text

    from chatmem.render.fields import FittedLine

    return isinstance(renderable, (str, Text, FittedLine))


def _number(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() and int(value) > 0 else None


class _Guard(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable],
                            ) -> list[ConsoleRenderable]:
        return [Printable(r) for r in renderables]


class SafeConsole(Console):
    """A Rich console that prints data's control characters as visible symbols: every
    renderable it prints goes through a render hook (Rich's public extension point) that
    wraps it in `Printable`. A Live display's own renderable is wrapped by its owner, since
    Live adds it after the hooks pushed before it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.push_render_hook(_Guard())

    @property
    def size(self) -> ConsoleDimensions:
        """Rich lays a dumb terminal out at 80×25 whatever COLUMNS or the tty say: a wide Emacs
        window got its tables cut at 80 columns, a narrow one lines broken by the terminal.
        There: COLUMNS/LINES, else the tty's own size, else 80×25."""
        if not self.is_dumb_terminal:
            return Console.size.fget(self)  # type: ignore[attr-defined]
        width = _number(self._environ.get("COLUMNS"))
        height = _number(self._environ.get("LINES"))
        if width is None or height is None:
            try:
                found = os.get_terminal_size(self.file.fileno())
            except (AttributeError, ValueError, OSError):  # not a tty (a test's screen)
                pass
            else:
                width, height = width or found.columns or None, height or found.lines or None
        return ConsoleDimensions(self._width or width or 80, self._height or height or 25)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def print(self, *objects: Any, **options: Any) -> None:
        """Rich's print; a line asked for `soft_wrap` on stderr (errors, notices, warnings:
        one line a script can match in a pipe or a log) wraps between words on a screen,
        where the terminal folded it at its edge mid-word (`…run on scri` / `pted`)."""
        if options.get("soft_wrap") and self.stderr and on_screen(self):
            options["soft_wrap"] = False
        super().print(*objects, **options)

    def on_broken_pipe(self) -> None:
        # Rich exits 1 here (1 says "not found"); the command line ends a closed stdout
        # once, with one exit code for a table and for JSON.
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def cells_prefix(text: str, room: int) -> str:
    """The longest start of `text` within `room` terminal cells that ends between two
    characters as a person reads them (a Chinese one is two cells, an accent stays on its
    letter)."""
    end = len(text)
    while end > 0 and (cell_len(text[:end]) > room or not grapheme_start(text, end)):
        end -= 1
    return text[:end]


def prompt_label(name: str, columns: int) -> str:
    """`name> `, the name cut (`…`) to half the terminal's width at most.

    A name as wide as the terminal (34 Chinese characters are 68 columns) pushed what is
    typed off the line: on a narrow terminal nobody saw the prompt or their own text.
    """
    room = max(columns // 2, 2)
    if cell_len(name) + 2 <= room:
        return f"{name}> "
    return f"{cells_prefix(name, room - 3)}…> "
