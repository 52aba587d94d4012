"""The process's standard streams, made safe once as `chatmem` starts.

Python sets them up from the locale: under `LC_ALL=C` (UTF-8 mode off) or
`PYTHONIOENCODING=gbk`, printing a Chinese reply raised UnicodeEncodeError, a
piped Chinese line read as bytes that are not UTF-8, and so did a Chinese
argument. A descriptor closed by the shell (`>&-`, `<&-`) left sys.stdout or
sys.stdin None. And a write to stdout that fails (a full disk) was a traceback
from wherever it happened. Set up here, none of these is: stdout and stderr
escape what their encoding cannot write, stdin is read as UTF-8 (as every file
chatmem reads is), a closed descriptor reads as empty or fails to write as
closed, and stdout's write errors are OutputFailed, one line. Text arguments are
read as UTF-8 where they are parsed (cli.grammar), file names left as they are.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import sys
from typing import TextIO

from chatmem.cli.starting import started
from chatmem.errors import OutputFailed

_NAMES = ("stdin", "stdout", "stderr")


def prepare_streams() -> None:
    """Called once by `main`, before anything is read or written."""
    for fd, name in enumerate(_NAMES):
        if getattr(sys, name) is None:
            setattr(sys, name, _fill_closed(fd))
    if not _is_utf8(sys.stdin.encoding):
        sys.stdin.reconfigure(encoding="utf-8", errors="surrogateescape")  # type: ignore[union-attr]
    sys.stderr.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    sys.stdout = _guarded(sys.stdout)
    sys.stderr = _erasing(sys.stderr)


def discard_unwritten() -> None:
    """What stdout holds but cannot write (the pipe's reader gone, the disk full) goes
    nowhere: else Python tries again at exit, and prints a traceback of it."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError, OutputFailed):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass  # a stdout without a descriptor has nowhere to write it anyway
        finally:
            os.close(devnull)


def _is_utf8(encoding: str | None) -> bool:
    try:
        return codecs.lookup(encoding or "").name == "utf-8"
    except LookupError:
        return False


def _fill_closed(fd: int) -> io.TextIOWrapper:
    """A stream for descriptor `fd`, which the shell closed: it is taken (by /dev/null),
    else the next file opened would get it, and a write meant for stdout would land in it.
    Stdin reads as empty; stdout's /dev/null is opened for reading only, so a write to it
    fails as to a closed descriptor (EBADF), and is said to."""
    devnull = os.open(os.devnull, os.O_WRONLY if fd == 2 else os.O_RDONLY)
    if devnull != fd:
        os.dup2(devnull, fd)
        os.close(devnull)
    return open(fd, "r" if fd == 0 else "w", encoding="utf-8", closefd=False)


_ESCAPE = "chatmem.json-escape"


def _json_escape(error: UnicodeError) -> tuple[str, int]:
    """A character the encoding lacks as JSON escapes it (`\\u4f60`, `\\ud83d\\ude00` for 😀):
    JSON printed (--json, an export) stays valid JSON of the same text, where Python's
    backslashreplace wrote `\\U0001f600`, which JSON has not; text reads the same either way."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    escaped = []
    for char in error.object[error.start:error.end]:
        point = ord(char)
        if point > 0xFFFF:
            point -= 0x10000
            escaped.append(f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}")
        else:
            escaped.append(f"\\u{point:04x}")
    return "".join(escaped), error.end


codecs.register_error(_ESCAPE, _json_escape)


class _Descriptor(io.RawIOBase):
    """A descriptor written whole at each write, erasing the line shown while the command
    loaded (cli.starting) before the first: a reply, a warning, a progress bar or a
    traceback."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: object) -> int:
        # All of it, as a buffered writer would: TextIOWrapper writes straight here (no
        # BufferedWriter between), and drops what it handed over whatever happens. Ctrl-C
        # landing just after os.write, in this Python code, left a BufferedWriter holding
        # bytes already written, which it wrote again ("HelloHello").
        view = memoryview(data).cast("B")  # type: ignore[arg-type]
        started()  # the line shown while the command loaded goes first
        written = 0
        while written < len(view):
            written += os.write(self._fd, view[written:])
        return written


class _Stdout(_Descriptor):
    """Descriptor 1, whose write errors other than a broken pipe are OutputFailed (a broken
    pipe keeps its own way out: exit 141, quietly, as git's and cat's)."""

    def write(self, data: object) -> int:
        try:
            return super().write(data)
        except BrokenPipeError:
            raise
        except OSError as e:
            reason = "it is closed" if e.errno == errno.EBADF else e.strerror or str(e)
            raise OutputFailed(reason) from e


def _guarded(stdout: TextIO) -> TextIO:
    """`stdout` writing through _Stdout, its encoding kept and what it cannot write escaped
    (`\\u4f60`, _json_escape): the reply is stored whole; a wrong locale is no traceback."""
    # UTF-8 mode's surrogateescape writes back the bytes an argument or a file name held;
    # under any other encoding it fails on every character the encoding lacks.
    utf8_kept = _is_utf8(stdout.encoding) and stdout.errors not in (None, "strict")
    errors = stdout.errors if utf8_kept else _ESCAPE
    try:
        fd = stdout.fileno()
    except (OSError, ValueError):
        return stdout  # not a descriptor: left as it is
    stdout.flush()
    return io.TextIOWrapper(_Stdout(fd), encoding=stdout.encoding,  # type: ignore[type-var]
                            errors=errors, line_buffering=getattr(stdout, "line_buffering",
                                                                  False),
                            write_through=getattr(stdout, "write_through", False))


def _erasing(stderr: TextIO) -> TextIO:
    """`stderr` writing through _Descriptor, its encoding and error handling kept, each write
    going out at once (as Python's own stderr does, unbuffered in effect)."""
    try:
        fd = stderr.fileno()
    except (OSError, ValueError):
        return stderr  # not a descriptor: left as it is
    stderr.flush()
    return io.TextIOWrapper(_Descriptor(fd), encoding=stderr.encoding,  # type: ignore[type-var]
                            errors=stderr.errors, line_buffering=True, write_through=True)
