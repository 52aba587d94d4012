"""One line on the terminal while a command starts, gone before anything else shows.

Before a command says anything, Python loads chatmem's strategies, the plugins and their
regular expressions: `eval` and `sessions import` (and every other command) showed a blank
terminal for 1.5 s on an idle machine and 5-9 s on a loaded one, then their progress. A
command that has not written by `AFTER` seconds now says that it is loading; the first
output of any kind (a console made to print, a write to stdout, the command's end) erases
the line first, so what the command prints is as before. On a terminal only (stderr a
screen, not TERM=dumb): a pipe, a file or a script's log never sees it.

Light on purpose (os, sys, threading): it runs before the slow imports it is about.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading

AFTER = 0.3
_ERASE = b"\r\x1b[2K"

_lock = threading.Lock()
_shown = False
_done = False
_timer: threading.Timer | None = None


def say_while_starting(words: str) -> None:
    """Show `words` (`eval`, `sessions import`) on stderr if the command is still silent
    after AFTER seconds."""
    global _timer
    if not _on_screen():
        return
    _timer = threading.Timer(AFTER, _show, (f"chatmem {words}".strip(),))
    _timer.daemon = True
    _timer.start()


def started() -> None:
    """The command is about to show something (or end): the line goes, and never comes."""
    global _done, _shown
    if _done:
        return
    with _lock:
        _done = True
        if _timer is not None:
            _timer.cancel()
        if _shown:
            _shown = False
            _write(_ERASE)


def loading_line(command: str, width: int) -> str:
    """`chatmem eval: loading strategies and plugins…`, shorter where the terminal is
    narrower: one line, never wrapped, as the erase clears the cursor's line only."""
    room = max(width - 1, 0)
    for text in (f"{command}: loading strategies and plugins…", f"{command}: loading…",
                 "loading…"):
        if len(text) <= room:
            return text
    return ""


def _show(command: str) -> None:
    global _shown
    with _lock:
        if _done:
            return
        text = loading_line(command, shutil.get_terminal_size((80, 24)).columns)
        if text:
            _write(text.encode("utf-8", "replace"))
            _shown = True


def _write(data: bytes) -> None:
    # Straight to the descriptor: a plugin loading meanwhile may have replaced sys.stderr.
    with contextlib.suppress(OSError):  # a terminal gone: nothing to say, nothing to erase
        os.write(2, data)


def _on_screen() -> bool:
    try:
        return os.isatty(2) and os.environ.get("TERM", "") != "dumb"
    except (OSError, ValueError):
        return False
