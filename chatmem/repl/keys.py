"""Keys a person presses while the REPL is busy: a reply streams, a command runs.

Left in its cooked mode between prompts, a terminal echoes keys wherever the
cursor is: into the middle of a streaming reply (`typed aheadHi`), or a `^C`
that throws Rich's live redraw off by a line, so a cut reply showed twice. Its
line discipline takes Ctrl-D as the end of a read nobody is making, and the key
is lost. So while the REPL reads from a terminal, the terminal stays quiet
between prompts (`QuietTerminal`): no echo, no line editing, and Ctrl-C still
a signal. While a turn runs, a thread reads the keys (`KeyWatch`):

- Ctrl-D cancels a reply still streaming, by Ctrl-C's own path (the turn is
  stored as cancelled), and the REPL leaves once the turn is stored;
- every other key is kept for the next prompt, as prompt-toolkit keeps keys it
  read ahead: typed text shows at the prompt, and an Enter typed with it sends
  it, as a shell runs a command typed while the last one ran. Dropping them
  would lose what a person typed and saw nothing wrong with. After a Ctrl-C
  they are kept too, as a draft (`as_draft`): nothing typed is lost, and nothing
  is sent that was typed before the person stopped the reply. The quiet terminal
  does not drop the keys it still holds when Ctrl-C interrupts (NOFLSH), so
  none is lost or kept depending on whether the thread had read it yet.
- a paste is one paste: the terminal marks pastes between prompts too
  (chatmem.repl.prompt), so a pasted block's lines wait at the next prompt as one
  message rather than each line's newline sending it as a turn of its own.

Keys pressed while a slash command runs stay queued in the quiet terminal and
reach the next prompt the same way, Ctrl-D included; after a Ctrl-C, as a draft.
"""

from __future__ import annotations

import os
import select
import signal
import termios
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from prompt_toolkit.key_binding import KeyPress

CTRL_D = b"\x04"
READ_BYTES = 1024


class QuietTerminal:
    """The terminal on `fd` without echo or line editing while in use; as found after.

    Not a terminal (a pipe, a test's stdin): nothing changes and `active` is False.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.found: list[Any] | None = None

    @property
    def active(self) -> bool:
        return self.found is not None

    def __enter__(self) -> QuietTerminal:
        try:
            self.found = termios.tcgetattr(self.fd)
        except termios.error:
            return self
        quiet = termios.tcgetattr(self.fd)
        quiet[3] &= ~(termios.ECHO | termios.ICANON)  # lflag; ISIG stays: Ctrl-C interrupts
        quiet[3] |= termios.NOFLSH  # and keeps the keys typed before it
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self.fd, termios.TCSANOW, quiet)  # keys already typed stay queued
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.active and kind is not None and issubclass(kind, KeyboardInterrupt):
            # chatmem ends on a Ctrl-C: the keys typed meanwhile are not the shell's to run
            # (NOFLSH kept them; `echo hi` typed while the model loaded ran in the shell).
            termios.tcflush(self.fd, termios.TCIFLUSH)
        self.restore()

    def restore(self) -> None:
        if self.found is not None:
            termios.tcsetattr(self.fd, termios.TCSANOW, self.found)

    def pending(self) -> bytes:
        """The keys typed and not yet read, taken from the terminal without waiting."""
        typed = bytearray()
        while self.active and select.select([self.fd], [], [], 0)[0]:
            try:
                data = os.read(self.fd, READ_BYTES)
            except OSError:
                break
            if not data:
                break
            typed += data
        return bytes(typed)

    def as_found(self) -> _AsFound:
        """The terminal as it was found for a while: for a program run in it ($EDITOR)."""
        return _AsFound(self)


@contextmanager
def quiet_until_the_prompt(stdin: TextIO, screens: Sequence[TextIO]) -> Iterator[None]:
    """`stdin`'s terminal quiet and marking pastes while a chat opens, before its first
    prompt; as found after. Not a terminal: nothing changes.

    Opening takes seconds (the embedded model loads): the terminal was still the shell's,
    so a block pasted meanwhile came unmarked and each of its lines was sent as a turn of
    its own once the prompt read them, and typed keys were echoed over the spinner. Marked,
    it waits at the first prompt as one message, as a paste made while a reply streams does.
    The mark is asked of the first of `screens` that is a terminal (the prompt's).
    """
    if not stdin.isatty():
        yield
        return
    screen = next((s for s in screens if s.isatty()), None)
    with QuietTerminal(stdin.fileno()):
        if screen is not None:
            screen.write(MARK_PASTES)
            screen.flush()
        try:
            yield
        finally:
            if screen is not None:
                # The prompt marks them again; a chat that never prompts leaves them as found.
                screen.write(UNMARK_PASTES)
                screen.flush()


MARK_PASTES = "\x1b[?2004h"
UNMARK_PASTES = "\x1b[?2004l"


class _AsFound:
    def __init__(self, quiet: QuietTerminal) -> None:
        self.quiet = quiet

    def __enter__(self) -> None:
        self.quiet.restore()

    def __exit__(self, *exc: object) -> None:
        if self.quiet.active:
            self.quiet.__enter__()


class KeyWatch:
    """The keys pressed on a quiet terminal's `fd` while one turn runs.

    `cancellable()` says whether Ctrl-D should cancel now (a reply still
    streaming): the thread that entered the watch gets a SIGINT, the way a
    terminal's Ctrl-C reaches it, even while it waits on the network.
    """

    def __init__(self, fd: int, cancellable: Callable[[], bool]) -> None:
        self.fd = fd
        self.cancellable = cancellable
        self.typed = bytearray()
        """Every key read before Ctrl-D (or the end of the turn), as the terminal sent it."""
        self.ctrl_d = False
        self._target = threading.get_ident()
        self._wake: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> KeyWatch:
        self._wake = os.pipe()
        self._thread = threading.Thread(target=self._read, name="chatmem-keys", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        assert self._wake is not None and self._thread is not None
        os.write(self._wake[1], b".")
        self._thread.join()
        for end in self._wake:
            os.close(end)

    def _read(self) -> None:
        assert self._wake is not None
        # A terminal's Ctrl-C is for the thread running the turn, never for this one.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        waiting: float | None = None
        while True:
            ready, _, _ = select.select([self.fd, self._wake[0]], [], [], waiting)
            if self.fd not in ready:
                return  # the turn is over and every key typed during it is read
            if self._wake[0] in ready:
                waiting = 0  # the turn is over: the keys still queued were typed during it
            try:
                data = os.read(self.fd, READ_BYTES)
            except OSError:
                return
            if not data:
                return
            before, ctrl_d, _ = data.partition(CTRL_D)
            self.typed += before
            if ctrl_d:
                self.ctrl_d = True
                if self.cancellable():
                    signal.pthread_kill(self._target, signal.SIGINT)
                return


def key_presses(typed: bytes) -> list[KeyPress]:
    """What a terminal sent, as prompt-toolkit's key presses (arrows, Enter, text).

    Escape sequences that are no key are left out: the parser takes a colour code
    (`ESC[31m`, in text pasted from a coloured log) for a mouse report, which the prompt's
    mouse handler cannot read, and it crashed. The REPL never asks for mouse reports, so
    none is real; the terminal showed the colour code as nothing, and so does the prompt.
    """
    from prompt_toolkit.input.vt100_parser import Vt100Parser
    from prompt_toolkit.keys import Keys

    keys: list[KeyPress] = []
    parser = Vt100Parser(keys.append)
    parser.feed(typed.decode("utf-8", errors="replace"))
    parser.flush()
    return [key for key in keys if key.key != Keys.Vt100MouseEvent]


def as_draft(keys: Sequence[KeyPress]) -> list[KeyPress]:
    """Keys typed during a reply cut by Ctrl-C, to press at the next prompt as a draft.

    Each Enter becomes Esc Enter, a new line in the message, and those at the end are
    left out: what was typed is all there, and it is sent only by a new Enter.
    """
    from prompt_toolkit.key_binding import KeyPress
    from prompt_toolkit.keys import Keys

    enter = (Keys.ControlM, Keys.ControlJ)
    kept = list(keys)
    while kept and kept[-1].key in enter:
        kept.pop()
    draft: list[KeyPress] = []
    for key in kept:  # the terminal sends Enter as Ctrl-J (ICRNL), which Esc does not bind
        draft += [KeyPress(Keys.Escape, "\x1b"), KeyPress(Keys.ControlM, "\r")] \
            if key.key in enter else [key]
    return draft
