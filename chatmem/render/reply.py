"""A reply as it streams: Markdown redrawn in place on a terminal, the text as sent elsewhere.

On a terminal the reply is shown as Markdown (bold, lists, highlighted code
blocks), redrawn a few times a second while it streams, and drawn whole once
it ends. Anywhere else (a pipe, a file, `--plain`) the deltas are written as
they arrive, byte for byte what the model sent, control characters made
visible. Either way a reply cannot drive the terminal: its text is passed
through `printable` before Markdown sees it, and the console it is drawn on
is a SafeConsole.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING

from chatmem.errors import OutputFailed
from chatmem.render.terminal import Printable, on_screen, printable

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.live import Live
    from rich.segment import Segment

CODE_THEME = "monokai"
REFRESH_PER_SECOND = 8
"""Redraws while streaming: each parses the whole reply, so not one per delta."""
DRAW_SHARE = 4
"""A redraw comes no sooner than this many times the last one's time after it ended: drawing
a long reply takes at most a fifth of the time it streams in."""


class _GrowingMarkdown:
    """The reply so far as Markdown, parsed when drawn (not on every delta)."""

    def __init__(self) -> None:
        self.chunks: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.markdown import Markdown
        from rich.text import Text

        # No OSC 8 links: their visible text is the reply's to choose, so [a bank's URL](a
        # phishing one) would show one address and open another. Without, the target
        # is printed after the text.
        shown = printable(self.text)
        markdown = Markdown(shown, code_theme=CODE_THEME, hyperlinks=False)
        # rich.markdown draws HTML as nothing: a reasoning model's <think> tags went (its
        # reasoning ran into its answer), a reply's `<div>` block went whole. Such a reply
        # is parsed again with HTML read as text, as it is stored and sent.
        if _holds_html(markdown.parsed):
            markdown.parsed = _html_as_text().parse(shown)
        # Nested too deep, a reply hides text that is stored and sent: past its nesting
        # limit the parser drops what the deepest quote or list item holds, and each level
        # drawn takes columns until none are left. Then it is shown as written.
        hidden = _hides_text(markdown.parsed, options.max_width)
        yield Text(shown) if hidden else markdown


def _holds_html(tokens: Sequence[Token]) -> bool:
    return any(t.type == "html_block" or any(c.type == "html_inline" for c in t.children or ())
               for t in tokens)


@cache
def _html_as_text() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # rich.markdown's parser (Markdown.__init__) but for HTML, which it reads as text.
    return MarkdownIt(options_update={"html": False}).enable("strikethrough").enable("table")


MIN_TEXT_WIDTH = 12
"""Fewest columns the text inside quotes and list items is drawn in as Markdown."""
_INDENTS = {"blockquote_open": 4, "list_item_open": 3}
"""Columns rich.markdown takes from the width for each (an ordered item: more for long
numbers)."""


def _hides_text(tokens: Sequence[Token], width: int) -> bool:
    """Whether drawing `tokens` in `width` columns would leave text out: what a container
    nested past the parser's limit held (it opens at the deepest level and closes at once),
    or text nested so deep that no width is left for it."""
    deepest, indents = _max_nesting() - 1, [0]
    for at, token in enumerate(tokens):
        if token.nesting == 1:
            if token.level >= deepest and at + 1 < len(tokens) and tokens[at + 1].nesting == -1:
                return True
            indent = _INDENTS.get(token.type, 0) + (len(token.info) if token.info else 0)
            indents.append(indents[-1] + indent)
        elif token.nesting == -1:
            indents.pop()
        elif width - indents[-1] < MIN_TEXT_WIDTH:
            return True
    return False


@cache
def _max_nesting() -> int:
    from markdown_it import MarkdownIt

    return int(MarkdownIt().options.maxNesting)  # the parser rich.markdown builds


class _Unpadded:
    """A renderable drawn without the blanks that pad its lines to the full width.

    rich.markdown pads each line of a paragraph with spaces to the terminal's width, and a
    terminal narrowed while the reply streamed rewraps those spaces onto rows of their own:
    each redraw then went back up fewer rows than the reply had come to fill, and left a
    copy of its top in the scrollback. Blanks with a background of their own (a code
    block's) are kept: they are drawn, not padding."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        lines = console.render_lines(self.renderable, options, pad=False)
        for at, line in enumerate(lines):
            if at:
                yield Segment.line()
            yield from _without_padding(line)


def _without_padding(line: list[Segment]) -> list[Segment]:
    """`line` without the unseen blanks at its end."""
    kept = list(line)
    while kept and not kept[-1].control and not _seen(kept[-1]):
        text = kept[-1].text.rstrip(" ")
        if text:
            kept[-1] = kept[-1]._replace(text=text)
            break
        kept.pop()
    return kept


def _seen(segment: Segment) -> bool:
    """Whether a blank drawn in `segment`'s style shows (a background, a line through it)."""
    style = segment.style
    return style is not None and bool(style.bgcolor or style.underline or style.strike
                                      or style.reverse or style.overline)


class ReplyWriter:
    """Where one reply goes: each console gets Markdown (a terminal, `markdown` on) or the
    plain text, flushed per delta so nothing waits in a buffer after Ctrl-C."""

    def __init__(self, consoles: Sequence[Console], *, markdown: bool) -> None:
        self.plain = [c for c in consoles if not (markdown and on_screen(c))]
        self.live_consoles = [c for c in consoles if markdown and on_screen(c)]
        self.reply = _GrowingMarkdown()
        self.lives: list[Live] = []
        self.written = False
        self.ended = False
        self.held = ""
        """A CR the last delta ended with, not yet written (write)."""
        self.failures: dict[int, Exception] = {}
        """Why each console (by id) that could not be written stopped getting the reply."""

    def failure(self, console: Console) -> Exception | None:
        """Why `console` could not show the reply whole (a closed pipe, a full disk, an
        encoding without its characters); None: it showed it."""
        return self.failures.get(id(console))

    def write(self, delta: str) -> None:
        if not self.written:
            self.written = True
            self._start()
        self.reply.chunks.append(delta)
        # A CR ending a delta may begin a CRLF the next one ends: held until it is known
        # (a line end passes as sent, a lone CR is shown as ␍).
        text, self.held = self.held + delta, ""
        if text.endswith("\r"):
            text, self.held = text[:-1], "\r"
        self._write_plain(printable(text))

    def _write_plain(self, shown: str) -> None:
        if not shown:
            return
        for console in self._writable(self.plain):
            with self._writing(console):
                console.file.write(shown)
                console.file.flush()

    def _writable(self, consoles: Sequence[Console]) -> list[Console]:
        return [c for c in consoles if id(c) not in self.failures]

    @contextmanager
    def _writing(self, console: Console) -> Iterator[None]:
        """A console that cannot be written is left out from then on, and the reply goes on:
        the turn is recorded whole (the model was paid for it), and its caller says it was
        not shown. Escaping the writer, the error lost the turn."""
        try:
            yield
        # ValueError: a closed file, or an encoding without the reply's characters.
        except (OSError, ValueError, OutputFailed) as e:
            self.failures[id(console)] = e

    def _start(self) -> None:
        for console in self.live_consoles:
            # No redirection: the status console (stderr) must never be drawn into
            # the reply's console (stdout), which holds replies only.
            live = paced_live()(_Unpadded(Printable(self.reply)), console=console,
                                refresh_per_second=REFRESH_PER_SECOND,
                                redirect_stdout=False, redirect_stderr=False)
            with self._writing(console):
                live.start()
                self.lives.append(live)

    def end(self) -> None:
        """The reply is complete or cut: draw it whole, end its line. Once, and only after
        something was written. A Ctrl-C meanwhile is held until the drawing has stopped
        (then raised): one that broke into `stop` left the display redrawing the reply
        for good, over the next turns (a long reply's last draw takes seconds)."""
        if self.ended or not self.written:
            return
        self.ended = True
        with _interrupt_held():
            for live in self.lives:
                with self._writing(live.console):
                    live.stop()  # the last draw shows the whole reply, however tall
        self._write_plain(printable(self.held) + "\n")


@cache
def paced_live() -> type[Live]:
    """rich's Live, whose redraws wait for DRAW_SHARE times as long as the last one took.

    Each redraw parses, lays out and writes the whole reply, so a long one takes long: 32 KB
    of code blocks or of a table about a second. Redrawn REFRESH_PER_SECOND times a second
    regardless, such a reply kept a core busy drawing until it ended (the stream read about
    4 times slower beside it, a local model's threads slowed); now the last draw stays on
    screen meanwhile. The draw at the end (`stop`) is never put off: it shows the reply whole.
    """
    from rich.live import Live

    class Paced(Live):
        clock: Callable[[], float] = staticmethod(time.monotonic)
        next_draw = 0.0

        def refresh(self) -> None:
            started = self.clock()
            # Not started: `stop` is drawing the reply whole, once and for all.
            if self._started and started < self.next_draw:
                return
            super().refresh()
            done = self.clock()
            self.next_draw = done + DRAW_SHARE * (done - started)

    return Paced


@contextmanager
def _interrupt_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) held until the block is done, then raised; as it is off the main
    thread, where no signal arrives."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: held.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT,
                      signal.default_int_handler if previous is None else previous)
    if held:
        raise KeyboardInterrupt
