"""Text files as chatmem reads every one: UTF-8, with a byte-order mark (Windows editors
write one) left out, and a file in another encoding named by its first line that is not
UTF-8 — in one wording, whichever command reads it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NotUtf8:
    """Where a file stops being UTF-8: its `line` (from 1) and the `byte` found there."""

    line: int
    byte: int

    def said(self, name: str, what: str) -> str:
        """One line naming the file `name` (a `what`: "transcript", "config file")."""
        return (f"{name}:{self.line}: not UTF-8 text (byte {self.byte:#04x}); save the "
                f"{what} as UTF-8")


def utf8_text(data: bytes) -> str | NotUtf8:
    """`data` as text, or where it is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return NotUtf8(_line_at(data, e.start), data[e.start])


def _line_at(data: bytes, offset: int) -> int:
    """The line `offset` is on, as an editor numbers it: a CRLF, an LF or a lone CR (a
    classic Mac file, which transcripts are read as) each end one."""
    before = data[:offset]
    return before.count(b"\n") + before.count(b"\r") - before.count(b"\r\n") + 1
