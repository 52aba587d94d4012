"""Text from a session, a model or a file never drives the terminal.

A session name, a message or a model's reply can hold escape sequences
(`\\x1b]0;PWNED\\x07` retitles the window, `\\x1b[2J` clears it). Every console
chatmem prints through shows control characters as visible symbols instead;
Rich's own styling and cursor control are untouched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

# C0 controls but tab and newline, DEL, and the C1 controls (\x9b is a one-byte CSI).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␇ for BEL: visible, inert
    return "\u2421" if code == 0x7F else "\ufffd"


def printable(text: str) -> str:
    """`text` with control characters (escape sequences' first byte) made visible."""
    return _UNSAFE.sub(_picture, text)


class SafeConsole(Console):
    """A Rich console that prints data's control characters as visible symbols."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(printable(segment.text), segment.style)
            for segment in buffer
        )
