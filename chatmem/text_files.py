"""Text files as chatmem reads every one: UTF-8, with a byte-order mark (Windows editors
write one) left out, and a file in another encoding named by its first line that is not
UTF-8 — in one wording, whichever command reads it."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

HEAD_BYTES = 16
"""What a limit that depends on a file's kind is given of it (enough for every magic number)."""


@dataclass(frozen=True)
class NotUtf8:
    """Where a file stops being UTF-8: its `line` (from 1) and the `byte` found there."""

    line: int
    byte: int
    gbk: bool = False
    """Whether the whole of it reads as Chinese in GB18030 (GBK's superset: what Notepad's
    "ANSI" saves on a Chinese Windows). Only said, never read so: the same bytes may be
    Big5 or Shift-JIS, and a guess between them would garble the text."""

    def said(self, name: str, what: str) -> str:
        """One line naming the file `name` (a `what`: "transcript", "config file")."""
        # "Save it as UTF-8" left a person with a GBK file nothing to do it with.
        how = (" (it reads as Chinese in GBK; iconv -f gb18030 -t utf-8 converts it)"
               if self.gbk else "")
        return (f"{name}:{self.line}: not UTF-8 text (byte {self.byte:#04x}); save the "
                f"{what} as UTF-8{how}")


def utf8_text(data: bytes) -> str | NotUtf8:
    """`data` as text, or where it is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return NotUtf8(_line_at(data, e.start), data[e.start], _reads_as_gbk(data))


def _reads_as_gbk(data: bytes) -> bool:
    """Whether `data` decodes cleanly as GB2312 (GBK's common characters) into text with
    Chinese characters: Big5 and Shift-JIS text decodes as GB18030 too, rarely as GB2312."""
    try:
        text = data.decode("gb2312")
    except UnicodeDecodeError:
        return False
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def _line_at(data: bytes, offset: int) -> int:
    """The line `offset` is on, as an editor numbers it: a CRLF, an LF or a lone CR (a
    classic Mac file, which transcripts are read as) each end one."""
    before = data[:offset]
    return before.count(b"\n") + before.count(b"\r") - before.count(b"\r\n") + 1


@dataclass(frozen=True)
class Oversized:
    """A file or stream of more than `limit` bytes: `size` when its size is known (a regular
    file), None when reading stopped a byte past the limit (a pipe, /dev/zero)."""

    limit: int
    size: int | None

    def amount(self) -> str:
        """Its size in words: "1,234 bytes", or "more than 1,000 bytes"."""
        if self.size is None:
            return f"more than {self.limit:,} bytes"
        return f"{self.size:,} bytes"


def read_within(path: Path, limit: int | Callable[[bytes], int],
                check: Callable[[os.stat_result], None] | None = None) -> bytes | Oversized:
    """The bytes of the file at `path`, or Oversized past `limit` (a function of its first
    HEAD_BYTES when the limit depends on what the file is). A regular file's size is looked
    at before anything is read; anything else (a FIFO, /dev/zero) is read to one byte past
    the limit, never whole. OSError as opening or reading it raises them.

    `check` is given the status of what was opened (a refusal raises) before a byte is read
    or any writer waited for: a FIFO is opened without waiting for one, so another account's
    is refused at once rather than when (or if ever) they write to it."""
    nonblocking = getattr(os, "O_NONBLOCK", 0) if check is not None else 0
    with open(path, "rb", opener=lambda name, flags: os.open(name, flags | nonblocking)) as file:
        status = os.fstat(file.fileno())
        if check is not None:
            check(status)
            if nonblocking:
                _wait_for_a_writer(file.fileno(), status)
        size = status.st_size if stat.S_ISREG(status.st_mode) else None
        head = file.read(HEAD_BYTES)
        most = limit(head) if callable(limit) else limit
        if size is not None and size > most:
            return Oversized(most, size)
        data = head + file.read(max(most + 1 - len(head), 0))
    # A file that grew since its size was looked at is "more than" too.
    return Oversized(most, None) if len(data) > most else data


def _wait_for_a_writer(fd: int, status: os.stat_result) -> None:
    """Blocking reads again on `fd`, opened non-blocking; on a FIFO, after a writer came.

    A FIFO opened non-blocking reads as empty while no one has it open for writing; poll
    (Linux's) says it readable only once someone wrote or a writer came and went, as the
    blocking open would have waited for."""
    if stat.S_ISFIFO(status.st_mode):
        import select

        select.select([fd], [], [])
    os.set_blocking(fd, True)


def read_stream_within(stream: BinaryIO,
                       limit: int | Callable[[bytes], int]) -> bytes | Oversized:
    """What `stream` (piped standard input) holds, or Oversized when it is more than `limit`
    bytes (a function of its first HEAD_BYTES, as for read_within): one byte past it is
    read, never the rest."""
    head = stream.read(HEAD_BYTES) if callable(limit) else b""
    most = limit(head) if callable(limit) else limit
    data = head + stream.read(max(most + 1 - len(head), 0))
    return Oversized(most, None) if len(data) > most else data
